"""The ServicerContext a gRPC call's servicer sees: grpc's own, carrying the call's request id.

Over REST every response has an ``x-request-id`` header (the caller's, or a generated one) and
the servicer finds the same id in its invocation metadata. This wrapper does the same for gRPC:
the id joins the invocation metadata when the caller sent none, and it goes out in the initial
metadata however the call ends: with the servicer's own initial metadata, before the first reply,
before an abort, or before a unary reply; an abort carries it in its trailers as well. And every
abort carries its ``google.rpc.Status`` in ``grpc-status-details-bin`` (empty of details when
none were given), as the HTTP port's native gRPC sends every error: a client reads the status of
any refusal the same way on either port.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any, NoReturn

import grpc
from google.rpc import status_pb2

from app.gateway.errors import STATUS_DETAILS_KEY

REQUEST_ID = "x-request-id"
MAX_REQUEST_ID = 128  # longer ids from a caller are replaced, as over REST

# A gRPC call runs in a task of its own, so every layer around its servicer (the request log,
# the context below) that asks within the call gets the one id generated for it.
_GENERATED_ID: ContextVar[str] = ContextVar("portico_grpc_generated_request_id", default="")


def generated_request_id() -> str:
    """The id this call gets when its caller sent none (made once per call's task)."""
    known = _GENERATED_ID.get()
    if not known:
        known = uuid.uuid4().hex
        _GENERATED_ID.set(known)
    return known


def caller_request_id(metadata: Sequence[tuple[str, str | bytes]]) -> str:
    """The caller's ``x-request-id`` if it is one Portico keeps, else this call's generated id."""
    given = [v for k, v in metadata if k == REQUEST_ID and isinstance(v, str)]
    if given and len(given[0]) <= MAX_REQUEST_ID:
        return given[0]
    return generated_request_id()


class IdentifiedContext:
    """Delegates everything to grpc's context; adds ``x-request-id`` to the initial metadata."""

    def __init__(self, context: grpc.aio.ServicerContext) -> None:
        self._context = context
        metadata = tuple(context.invocation_metadata() or ())
        self.request_id = caller_request_id(metadata)
        if (REQUEST_ID, self.request_id) not in metadata:
            others = tuple((k, v) for k, v in metadata if k != REQUEST_ID)
            metadata = (*others, (REQUEST_ID, self.request_id))
        self._metadata = metadata
        self._sent = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    def invocation_metadata(self) -> tuple[tuple[str, str | bytes], ...]:
        """The caller's metadata, with the call's ``x-request-id``."""
        return self._metadata

    async def send_initial_metadata(self, metadata: Sequence[tuple[str, str | bytes]]) -> None:
        """Send ``metadata`` and the request id (once; grpc refuses a second time)."""
        already = self._sent
        self._sent = True
        if already or any(k == REQUEST_ID for k, _ in metadata):
            await self._context.send_initial_metadata(tuple(metadata))
        else:
            await self._context.send_initial_metadata((*metadata, (REQUEST_ID, self.request_id)))

    async def send_request_id(self) -> None:
        """Send the initial metadata now unless it went out already; a call that has ended
        meanwhile (cancelled, timed out) has nobody left to send it to."""
        if self._sent:
            return
        with contextlib.suppress(grpc.aio.UsageError, RuntimeError):
            await self.send_initial_metadata(())
        self._sent = True

    async def write(self, message: Any) -> None:
        await self.send_request_id()
        await self._context.write(message)

    async def abort(
        self,
        code: grpc.StatusCode,
        details: str = "",
        trailing_metadata: Sequence[tuple[str, str | bytes]] = (),
    ) -> NoReturn:
        trailing = tuple(trailing_metadata)
        if not any(key == STATUS_DETAILS_KEY for key, _ in trailing):
            status = status_pb2.Status(code=code.value[0], message=details)
            trailing += ((STATUS_DETAILS_KEY, status.SerializeToString()),)
        await self.abort_with_status(_Status(code, details, trailing))

    async def abort_with_status(self, status: grpc.Status) -> NoReturn:
        await self.send_request_id()
        # The id in the trailers too: a grpc client that sees a stream's status right after
        # its initial metadata at times surfaces none of the latter (grpcio: about one
        # refused stream in fifty), never without the trailers.
        trailing = tuple(status.trailing_metadata or ())
        if not any(key == REQUEST_ID for key, _ in trailing):
            trailing += ((REQUEST_ID, self.request_id),)
        await self._context.abort_with_status(_Status(status.code, status.details, trailing))
        raise AssertionError("grpc's abort returned")  # pragma: no cover


class _Status(grpc.Status):
    """A status to abort with (grpc.Status is only its fields' names)."""

    def __init__(
        self,
        code: grpc.StatusCode,
        details: str,
        trailing_metadata: tuple[tuple[str, str | bytes], ...],
    ) -> None:
        self.code = code
        self.details = details
        self.trailing_metadata = trailing_metadata
