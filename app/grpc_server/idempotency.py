"""The gRPC server's side of idempotency keys: a servicer's ending as the hook sees it.

A grpc.aio servicer ends a call by aborting (the status is then already on its way) or by setting
a code and returning. The hook (``app/gateway/idempotency.py``) records outcomes as replies or
GatewayErrors, so the first run's ending is handed to it as :class:`_Ended` (a GatewayError with
the same status) and, on the way back out, given to grpc exactly as the servicer left it; a
replayed error is a plain GatewayError, which the server's guard sends like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf.message import Message
from google.rpc import status_pb2

from app.gateway.errors import STATUS_DETAILS_KEY, GatewayError
from app.gateway.idempotency import Idempotency
from app.gateway.registry import Method


class _Ended(GatewayError):
    """The first run's non-OK ending; ``aborted`` is the servicer's abort, if it aborted."""

    def __init__(self, status: status_pb2.Status, aborted: BaseException | None) -> None:
        error = GatewayError.from_status(status)
        super().__init__(error.code, error.message, error.details)
        self.aborted = aborted


def _status(context: Any) -> status_pb2.Status:
    """The status the servicer ended with: its rich ``google.rpc.Status`` trailer if it sent one."""
    for name, value in context.trailing_metadata() or ():
        if name == STATUS_DETAILS_KEY and isinstance(value, bytes):
            return status_pb2.Status.FromString(value)
    code = context.code() or grpc.StatusCode.UNKNOWN
    return status_pb2.Status(code=code.value[0], message=context.details() or "")


async def run_once(
    idempotency: Idempotency,
    method: Method,
    key: str,
    request: Message,
    behaviour: Callable[..., Any],
    context: Any,  # the call's grpc.aio ServicerContext, or the server's wrapper of one
) -> Any:
    """``behaviour(request, context)`` through the hook: run once per key, else replayed."""

    async def run() -> Message:
        try:
            reply = await behaviour(request, context)
        except grpc.aio.AbortError as aborted:
            raise _Ended(_status(context), aborted) from aborted
        if context.code() not in (None, grpc.StatusCode.OK):
            raise _Ended(_status(context), None)
        if not isinstance(reply, Message):
            raise TypeError(f"{method.full_name} returned {type(reply)!r}")
        return reply

    try:
        return await idempotency(method, key, request, run)
    except _Ended as ended:
        if ended.aborted is not None:
            raise ended.aborted from None
        return None  # grpc sends the code and details the servicer set
