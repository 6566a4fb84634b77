"""How servicers fail: a gRPC status with a precise message and, for bad input, the fields.

Every servicer reports errors through these functions, so both transports carry the same
``google.rpc.Status`` (with ``google.rpc.BadRequest`` details naming each wrong field).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NoReturn

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.protobuf import message as message_pb
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from app.store import StoreError


@dataclass(frozen=True)
class Violation:
    """One wrong field: its path (``worker_node_pools[1].count``) and what is wrong with it."""

    field: str
    description: str


@dataclass
class Violations:
    """Collects every problem of a request, so the caller learns them all at once."""

    found: list[Violation] = field(default_factory=list)

    def add(self, path: str, description: str) -> None:
        self.found.append(Violation(path, description))

    def check(self, ok: bool, path: str, description: str) -> bool:
        """Record a violation unless ``ok``; returns ``ok``."""
        if not ok:
            self.add(path, description)
        return ok

    def __bool__(self) -> bool:
        return bool(self.found)

    def summary(self) -> str:
        """Every problem on one line, ``field: problem; ...``."""
        return "; ".join(f"{v.field}: {v.description}" for v in self.found)


class Rejected(Exception):
    """A request refused after looking at it or at the stored state (a transaction it is
    raised in rolls back); ``code`` is the gRPC status the servicer answers with."""

    def __init__(
        self, code: grpc.StatusCode, message: str, violations: Iterable[Violation] = ()
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.violations = tuple(violations)

    @classmethod
    def invalid(cls, violations: Violations) -> Rejected:
        """INVALID_ARGUMENT naming every wrong field."""
        return cls(grpc.StatusCode.INVALID_ARGUMENT, violations.summary(), violations.found)


def rich_status(
    code: grpc.StatusCode,
    message: str,
    violations: Iterable[Violation] = (),
    retry_after: float = 0.0,
) -> grpc.Status:
    """A gRPC status whose details carry the field violations and a retry delay, if any."""
    details: list[message_pb.Message] = []
    violations = list(violations)
    if violations:
        details.append(
            error_details_pb2.BadRequest(
                field_violations=[
                    error_details_pb2.BadRequest.FieldViolation(
                        field=v.field, description=v.description
                    )
                    for v in violations
                ]
            )
        )
    if retry_after > 0:
        delay = duration_pb2.Duration(seconds=math.ceil(retry_after))
        details.append(error_details_pb2.RetryInfo(retry_delay=delay))
    packed = []
    for detail in details:
        wrapper = any_pb2.Any()
        wrapper.Pack(detail)
        packed.append(wrapper)
    status = status_pb2.Status(code=code.value[0], message=message, details=packed)
    return rpc_status.to_status(status)


async def abort(
    context: grpc.aio.ServicerContext,
    code: grpc.StatusCode,
    message: str,
    violations: Iterable[Violation] = (),
) -> NoReturn:
    """End the RPC with ``code`` and ``message`` (and field violations as details)."""
    await context.abort_with_status(rich_status(code, message, violations))
    raise AssertionError("abort_with_status returned")  # pragma: no cover - it always raises


async def abort_invalid(context: grpc.aio.ServicerContext, violations: Violations) -> NoReturn:
    """End the RPC with INVALID_ARGUMENT naming every wrong field."""
    await abort(context, grpc.StatusCode.INVALID_ARGUMENT, violations.summary(), violations.found)


async def abort_store_error(context: grpc.aio.ServicerContext, error: StoreError) -> NoReturn:
    """End the RPC with the status the store error stands for (NOT_FOUND, ABORTED, ...)."""
    await abort(context, error.code, str(error))


async def abort_rejected(context: grpc.aio.ServicerContext, rejected: Rejected) -> NoReturn:
    """End the RPC with the refusal's status, message and field violations."""
    await abort(context, rejected.code, rejected.message, rejected.violations)
