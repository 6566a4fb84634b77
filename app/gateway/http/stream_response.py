"""A streamed HTTP response: when its headers go out, its frames, keepalives and final frame.

SSE answers its headers at once; NDJSON with its first reply or after
:data:`app.settings.limits.STREAM_HEADERS_WAIT_SECONDS`, whichever comes first (a request the
servicer refuses at once still gets its own HTTP status, and a watch that waits for its first event
still shows it is connected). Once the headers are out the stream is registered for keepalives.
"""

from __future__ import annotations

import asyncio
import contextlib

from starlette.types import Send

from app.gateway import http_io
from app.gateway.codec.json_mapping import JsonOptions
from app.gateway.codec.streaming import Framing
from app.gateway.context import GatewayContext
from app.gateway.errors import GatewayError
from app.gateway.http import reply_coding
from app.gateway.http.compression import Headers, stream_coder
from app.gateway.open_streams import Stream
from app.settings import limits


class StreamResponse:
    """The response of one server-streaming call over HTTP."""

    def __init__(
        self,
        send: Send,
        framing: Framing,
        request_id: str,
        context: GatewayContext,
        stream: Stream,
        accept_encoding: bytes | None = None,
    ) -> None:
        self._send = send
        # As the client asks: every frame goes out compressed and flushed at once, or as it is.
        self._coder, self._coding = stream_coder(accept_encoding)
        self._framing = framing
        self._request_id = request_id
        self._context = context
        self._stream = stream
        self._starting: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._not_modified = False

    def open(self) -> None:
        """The call is accepted: start the response now (SSE) or soon (NDJSON)."""
        if self._framing.opening:
            self._begin()
        else:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(limits.STREAM_HEADERS_WAIT_SECONDS, self._begin)

    async def not_modified(self, if_none_match: bytes | None) -> bool:
        """Answer 304 with no body, if nothing went out yet and ``If-None-Match`` names the
        ETag the servicer gave before its first reply; then the stream is over."""
        if if_none_match is None or self._starting is not None:
            return False
        etag = reply_coding.etag_of(self._context.initial_metadata)
        if etag is None or not reply_coding.none_match(if_none_match, etag):
            return False
        self.stop()
        self._context.headers_sent = True
        await http_io.send_not_modified(self._send, self._request_id, self._context)
        self._not_modified = True
        return True

    async def frame(self, rendered: bytes, event_id: int) -> None:
        """Send one reply (with the revision of the event it stands for, if any)."""
        await self._started()
        body = self._framing.frame(rendered, event_id)
        await self._send(
            {"type": "http.response.body", "body": self._encoded(body), "more_body": True}
        )
        self._stream.sent()

    async def finish(self, error: GatewayError | None, options: JsonOptions) -> int:
        """End the response: an error before anything was sent gets its own HTTP status;
        otherwise the stream ends with a final error frame, or with nothing more. Returns the
        HTTP status the response went out with."""
        self.stop()
        if self._not_modified:
            return 304
        if self._starting is None and error is not None:
            await http_io.send_error(
                self._send, error, self._request_id, options.proto_names, self._context
            )
            return error.http_status
        await self._started()
        tail = b"" if error is None else self._framing.error(error, options)
        if self._coder is not None:
            tail = self._coder.end(tail)
        await self._send({"type": "http.response.body", "body": tail, "more_body": False})
        return 200

    def stop(self) -> None:
        """No headers are to go out on their own any more."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._stream.beat = None

    def _begin(self) -> None:
        self._timer = None
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start())
            # A client that went away meanwhile: its failure is the flow's news, not ours.
            self._starting.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _started(self) -> None:
        starting = self._starting
        if starting is not None and starting.done():
            starting.result()  # as awaiting it would: its failure, if it failed
            return
        if self._timer is not None:
            self._timer.cancel()
        self._begin()
        assert self._starting is not None
        await asyncio.shield(self._starting)

    async def _start(self) -> None:
        self._context.headers_sent = True
        framing = self._framing
        extra: Headers = self._coding
        await http_io.start(
            self._send, 200, framing.content_type, self._request_id, self._context, extra
        )
        # An empty body without an opening: a server holding the head until the body's first
        # bytes (pyvoy's Envoy does) would keep it until the first reply or keepalive.
        opening = self._encoded(framing.opening) if framing.opening else b""
        await self._send({"type": "http.response.body", "body": opening, "more_body": True})
        self._stream.sent()
        self._stream.beat = self._keepalive

    async def _keepalive(self) -> None:
        with contextlib.suppress(OSError):
            keepalive = self._encoded(self._framing.keepalive)
            await self._send({"type": "http.response.body", "body": keepalive, "more_body": True})

    def _encoded(self, data: bytes) -> bytes:
        return data if self._coder is None else self._coder.chunk(data)
