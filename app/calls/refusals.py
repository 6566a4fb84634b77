"""How a request is refused: a gRPC status, a message safe to show, and what was wrong.

One type for every refusal, whoever refuses (the gate at login or admission, a servicer after
looking at the request or the stored state), so both transports carry the same
``google.rpc.Status``: ``google.rpc.BadRequest`` details naming each wrong field, and
``google.rpc.RetryInfo`` when trying again later may help. It depends on no package of this
project, so the auth package and the services may both use it without depending on each other.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.protobuf import message as message_pb
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from app.settings import limits


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
        """The problems on one line, ``field: problem; ...`` (the first few, then how many more)."""
        return limits.summary([(v.field, v.description) for v in self.found])


class Rejected(Exception):
    """A request refused after looking at it, at the caller or at the stored state (a
    transaction it is raised in rolls back); ``code`` and the message are safe to show the
    caller, and the status answered carries the violations and the retry delay."""

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        violations: Iterable[Violation] = (),
        *,
        retry_after: float = 0.0,
        challenge: str = "",
        details: Iterable[message_pb.Message] = (),
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.violations = tuple(violations)
        self.retry_after = retry_after
        # More google.rpc details (e.g. the ResourceInfo of what was not found).
        self.details = tuple(details)
        # RFC 6750's WWW-Authenticate answer to a token that was given but is not good.
        self.challenge = challenge

    @classmethod
    def invalid(cls, violations: Violations) -> Rejected:
        """INVALID_ARGUMENT naming every wrong field."""
        return cls(grpc.StatusCode.INVALID_ARGUMENT, violations.summary(), violations.found)

    def status(self) -> grpc.Status:
        """The refusal as a rich gRPC status."""
        return rpc_status.to_status(self.status_proto())

    def status_proto(self) -> status_pb2.Status:
        """The refusal as a ``google.rpc.Status``, details and all."""
        return rich_status_proto(
            self.code, self.message, self.violations, self.retry_after, extra=self.details
        )


def rich_status(
    code: grpc.StatusCode,
    message: str,
    violations: Iterable[Violation] = (),
    retry_after: float = 0.0,
    extra: Iterable[message_pb.Message] = (),
) -> grpc.Status:
    """A gRPC status whose details carry the field violations, a retry delay and ``extra``;
    within the error limits of :mod:`app.settings.limits`."""
    return rpc_status.to_status(rich_status_proto(code, message, violations, retry_after, extra))


def rich_status_proto(
    code: grpc.StatusCode,
    message: str,
    violations: Iterable[Violation] = (),
    retry_after: float = 0.0,
    extra: Iterable[message_pb.Message] = (),
) -> status_pb2.Status:
    """:func:`rich_status` as the ``google.rpc.Status`` it carries."""
    details: list[message_pb.Message] = []
    violations = list(violations)
    if violations:
        details.append(limits.bad_request((v.field, v.description) for v in violations))
    if retry_after > 0:
        delay = duration_pb2.Duration(seconds=math.ceil(retry_after))
        details.append(error_details_pb2.RetryInfo(retry_delay=delay))
    details.extend(extra)
    packed = []
    for detail in details:
        wrapper = any_pb2.Any()
        wrapper.Pack(detail)
        packed.append(wrapper)
    status = status_pb2.Status(code=code.value[0], message=message, details=packed)
    return limits.fit_status(status)
