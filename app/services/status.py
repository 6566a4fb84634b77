"""How servicers fail: a gRPC status with a precise message and, for bad input, the fields.

Every servicer reports errors through these functions, so both transports carry the same
``google.rpc.Status`` (with ``google.rpc.BadRequest`` details naming each wrong field). The
refusal type and the violations live in :mod:`app.calls.refusals`, shared with the auth package.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import NoReturn

import grpc
from google.rpc import status_pb2
from grpc_status import rpc_status

from app.calls.callers import call_request_id
from app.calls.refusals import Rejected, Violation, Violations, rich_status, rich_status_proto
from app.observe.repeats import Repeats
from app.store import StoreError, Unavailable

log = logging.getLogger("portico.services")
_store_errors = Repeats(log)


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


def store_error_status(error: StoreError, request_id: str) -> status_pb2.Status:
    """The status a store error stands for (NOT_FOUND, ABORTED, UNAVAILABLE, ...); for
    UNAVAILABLE with the delay to retry after (``google.rpc.RetryInfo``, HTTP's Retry-After).

    What the database driver said goes to the log with the request id (a line of each kind per
    interval: an outage fails every call at once); the caller gets the generic message and that
    id, to quote when asking an operator.
    """
    message = error.message
    if error.detail:
        _store_errors.warning(
            message, "store error (request id %s): %s: %s", request_id, message, error.detail
        )
        message = f"{message} (request id {request_id})"
    retry_after = error.retry_after if isinstance(error, Unavailable) else 0.0
    return rich_status_proto(error.code, message, retry_after=retry_after)


async def abort_store_error(context: grpc.aio.ServicerContext, error: StoreError) -> NoReturn:
    """End the RPC with the status the store error stands for (see :func:`store_error_status`)."""
    status = store_error_status(error, call_request_id(context))
    await context.abort_with_status(rpc_status.to_status(status))
    raise AssertionError("abort_with_status returned")  # pragma: no cover - it always raises


async def abort_rejected(context: grpc.aio.ServicerContext, rejected: Rejected) -> NoReturn:
    """End the RPC with the refusal's status, message, field violations and retry delay."""
    await context.abort_with_status(rejected.status())
    raise AssertionError("abort_with_status returned")  # pragma: no cover - it always raises
