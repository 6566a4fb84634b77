"""The ``grpc.aio.ServicerContext`` that in-process (REST) calls hand to servicers.

It behaves like grpc.aio's own context where a servicer can observe it, so a servicer cannot
tell which transport called it: ``abort`` raises, ``set_code``/``set_details`` end the call when
the servicer returns, metadata flows both ways, deadlines come from ``grpc-timeout``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Sequence,
)
from typing import Any, NoReturn

import grpc
from google.rpc import status_pb2

from app.gateway.errors import CODE_BY_NUMBER, STATUS_DETAILS_KEY, GatewayError, RpcAborted

Metadata = tuple[tuple[str, str | bytes], ...]
# What a servicer may hand over: pairs, or grpc.aio.Metadata (which iterates as pairs).
MetadataIn = grpc.aio.Metadata | Sequence[tuple[str, str | bytes]]


class GatewayContext(grpc.aio.ServicerContext):
    """Servicer context for a call that arrived over HTTP."""

    # What a call that changes nothing keeps: read from the class, set on the instance when the
    # servicer (or the router) changes it. One context is built per request, and each attribute
    # set at construction is measurable there (``tests/bench``).
    _code: grpc.StatusCode | None = None
    _details = ""
    initial_metadata: Metadata = ()
    trailing_metadata_sent: Metadata = ()
    headers_sent = False
    _cancelled = False
    _done = False
    _callbacks: tuple[Callable[[Any], object], ...] = ()
    _requests: AsyncIterator[Any] | None = None  # what read() takes from
    _outbox: asyncio.Queue[Any] | None = None  # what write() puts into
    client_certificate: bytes | None = None  # PEM, verified by the TLS server (native gRPC)

    def __init__(
        self,
        metadata: Metadata = (),
        client: tuple[str, int] | None = None,
        deadline: float | None = None,
    ) -> None:
        self._metadata = metadata
        self._client = client  # the ASGI scope's: formatted only when the peer is asked for
        self.deadline = deadline  # time.monotonic() value, for the router

    # -- what the servicer reads ---------------------------------------------------------------

    # grpc.aio's own context returns a tuple of (key, value) pairs as well; the stub's
    # "Metadata | None" is narrower than what grpc does, and servicers only iterate it.
    def invocation_metadata(self) -> Metadata:  # type: ignore[override]
        """Request headers as gRPC metadata."""
        return self._metadata

    def peer(self) -> str:
        """``ipv4:host:port`` of the HTTP client, like grpc's."""
        return _peer_name(self._client)

    def peer_identities(self) -> None:
        return None

    def peer_identity_key(self) -> None:
        return None

    def auth_context(self) -> dict[str, list[bytes]]:
        """As grpc's: the verified client certificate of a TLS call, where the server has one."""
        if self.client_certificate is None:
            return {}
        return {"transport_security_type": [b"ssl"], "x509_pem_cert": [self.client_certificate]}

    # grpc documents None for a call without a deadline; the stub says float.
    def time_remaining(self) -> float | None:  # type: ignore[override]
        """Seconds to the deadline, or None without one."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def cancelled(self) -> bool:
        """True once the client went away or the deadline passed."""
        return self._cancelled

    def done(self) -> bool:
        """True once the call has ended, for whatever reason."""
        return self._done

    def add_done_callback(self, callback: Callable[[Any], object]) -> None:
        """Run ``callback(self)`` when the call ends (immediately if it already has)."""
        if self._done:
            callback(self)
        else:
            self._callbacks = (*self._callbacks, callback)

    # -- how the servicer answers --------------------------------------------------------------

    async def send_initial_metadata(self, initial_metadata: MetadataIn) -> None:
        """Metadata sent as ``Grpc-Metadata-*`` response headers.

        A servicer may send it until its first message, as over gRPC. Some HTTP streams send
        their headers before that (SSE at once, NDJSON after a short wait): what comes later
        has no headers left to go in and is dropped, never an error the servicer would see
        only on this transport."""
        if not self.headers_sent:
            self.initial_metadata = tuple(initial_metadata)

    def set_trailing_metadata(self, trailing_metadata: MetadataIn) -> None:
        """Metadata sent after the reply (headers for unary calls)."""
        self.trailing_metadata_sent = tuple(trailing_metadata)

    def trailing_metadata(self) -> Metadata:  # type: ignore[override]  # pairs, as grpc's
        return self.trailing_metadata_sent

    async def abort(
        self, code: grpc.StatusCode, details: str = "", trailing_metadata: MetadataIn = ()
    ) -> NoReturn:
        """End the call with a status; rich details travel in ``grpc-status-details-bin``."""
        if code is grpc.StatusCode.OK:
            raise ValueError("abort() needs a non-OK status code")
        self.trailing_metadata_sent = tuple(trailing_metadata) or self.trailing_metadata_sent
        status = _status_from_metadata(code, details, self.trailing_metadata_sent)
        if status is not None:
            raise RpcAborted(code, status.message, status.details)
        raise RpcAborted(code, details)

    async def abort_with_status(self, status: grpc.Status) -> NoReturn:
        """``abort`` with a ``grpc.Status``, e.g. from ``grpc_status.rpc_status.to_status``."""
        await self.abort(status.code, status.details, status.trailing_metadata)

    def set_code(self, code: grpc.StatusCode) -> None:
        self._code = code

    def set_details(self, details: str) -> None:
        self._details = details

    # None until the servicer sets one; the stub says StatusCode.
    def code(self) -> grpc.StatusCode | None:  # type: ignore[override]
        return self._code

    def details(self) -> str:
        return self._details

    def set_compression(self, compression: grpc.Compression) -> None:
        """Compression is HTTP's business here; accepted and ignored."""

    def disable_next_message_compression(self) -> None:
        """Compression is HTTP's business here; accepted and ignored."""

    async def read(self) -> Any:
        """The next request of a client stream, or ``grpc.aio.EOF`` after the last one."""
        if self._requests is None:
            raise grpc.aio.UsageError("read() is only for client-streaming calls")
        return await anext(self._requests, grpc.aio.EOF)

    async def write(self, message: Any) -> None:
        """Send one reply of a server stream, from a handler that returns instead of yielding."""
        if self._outbox is None:
            raise grpc.aio.UsageError("write() is only for server-streaming handlers that return")
        await self._outbox.put(message)

    # -- what the router does -----------------------------------------------------------------

    def read_from(self, requests: AsyncIterator[Any]) -> None:
        """Let ``read()`` take the client stream's requests (the handler's iterator is the same)."""
        self._requests = requests

    def replies(self, handler_result: Any) -> AsyncGenerator[Any, None]:
        """A server stream's replies: those an async-generator handler yields, or those a handler
        that returns sends with ``write()`` (grpc.aio allows both styles). Always a generator,
        so that the flow can close it."""
        if isinstance(handler_result, AsyncGenerator):
            return handler_result
        if hasattr(handler_result, "__aiter__"):
            return _each(handler_result)
        return self._written(handler_result)

    async def _written(self, handler_call: Awaitable[Any]) -> AsyncGenerator[Any, None]:
        # One reply in flight: write() waits until the router has taken the previous one, as a
        # slow client slows a gRPC handler down.
        outbox: asyncio.Queue[Any] = asyncio.Queue(maxsize=1)
        self._outbox = outbox
        handler = asyncio.ensure_future(handler_call)
        # The call may end while the router is not iterating any more (the client went away).
        self.add_done_callback(lambda _: handler.cancel())
        handler.add_done_callback(lambda done: done.cancelled() or done.exception())
        taken: asyncio.Future[Any] | None = None
        try:
            while True:
                taken = asyncio.ensure_future(outbox.get())
                await asyncio.wait({taken, handler}, return_when=asyncio.FIRST_COMPLETED)
                if taken.done():
                    yield taken.result()
                    continue
                taken.cancel()
                while not outbox.empty():
                    yield outbox.get_nowait()
                handler.result()  # the handler's failure, after the replies it wrote before it
                return
        finally:
            if taken is not None:
                taken.cancel()
            if not handler.done():
                handler.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await handler

    def status_error(self) -> GatewayError | None:
        """The failure set with ``set_code``/``set_details``, if any."""
        if self._code is None or self._code is grpc.StatusCode.OK:
            return None
        status = _status_from_metadata(self._code, self._details, self.trailing_metadata_sent)
        if status is not None:
            return GatewayError.from_status(status)
        return GatewayError(self._code, self._details)

    def cancel(self) -> None:
        """Mark the call cancelled (client disconnected or deadline passed) and end it."""
        self._cancelled = True
        self.finish()

    def finish(self) -> None:
        """Mark the call ended and run the done callbacks once."""
        if self._done:
            return
        self._done = True
        callbacks, self._callbacks = self._callbacks, ()
        for callback in callbacks:
            callback(self)


async def _each(replies: AsyncIterable[Any]) -> AsyncGenerator[Any, None]:
    async for reply in replies:
        yield reply


def _peer_name(client: tuple[str, int] | None) -> str:
    """An ASGI client as grpc names peers: ``ipv4:host:port`` or ``ipv6:[host]:port``."""
    if not client:
        return ""
    host, port = client[0], client[1]
    return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"


def _status_from_metadata(
    code: grpc.StatusCode, details: str, metadata: Metadata
) -> status_pb2.Status | None:
    """The google.rpc.Status in ``grpc-status-details-bin``, checked like grpcio-status does."""
    for key, value in metadata:
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            if CODE_BY_NUMBER.get(status.code) is not code:
                raise ValueError("code in grpc-status-details-bin does not match the abort code")
            return status
    return None
