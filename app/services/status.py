"""How servicers fail: a gRPC status with a precise message and, for bad input, the fields.

Every servicer reports errors through these functions, so both transports carry the same
``google.rpc.Status`` (with ``google.rpc.BadRequest`` details naming each wrong field). The
refusal type and the violations live in :mod:`app.calls.refusals`, shared with the auth package.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

import grpc
from grpc_status import rpc_status

from app.calls.callers import call_request_id
from app.calls.refusals import Rejected, Violation, Violations, rich_status
from app.store import StoreError
from app.store.error_status import store_error_status


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
    """End the RPC with the status the store error stands for (see :func:`store_error_status`)."""
    status = store_error_status(error, call_request_id(context))
    await context.abort_with_status(rpc_status.to_status(status))
    raise AssertionError("abort_with_status returned")  # pragma: no cover - it always raises


async def abort_rejected(context: grpc.aio.ServicerContext, rejected: Rejected) -> NoReturn:
    """End the RPC with the refusal's status, message, field violations and retry delay."""
    await context.abort_with_status(rejected.status())
    raise AssertionError("abort_with_status returned")  # pragma: no cover - it always raises
