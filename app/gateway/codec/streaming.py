"""Streams over HTTP: NDJSON and SSE replies, NDJSON request bodies, WebSocket frames.

An :class:`InboundPump` owns the ASGI ``receive`` channel for a streaming call: it hands body
chunks (or WebSocket frames) through a small bounded queue, so memory stays flat, and notices a
client that goes away so the call can be cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf import message

from app.gateway.codec.json_mapping import JsonOptions, dump_json, load_json, parse_into
from app.gateway.errors import GatewayError, body_too_large, body_too_slow
from app.gateway.http.slow_reads import slow_reads

Receive = Callable[[], Any]
_QUEUE_SIZE = 8  # chunks in flight between the socket and the servicer


class InboundPump:
    """Reads ``receive`` in a task: payloads to a bounded queue, a disconnect to a callback."""

    def __init__(self, receive: Receive, on_disconnect: Callable[[], None]) -> None:
        self._receive = receive
        self._on_disconnect = on_disconnect
        self._queue: asyncio.Queue[bytes | str | None] = asyncio.Queue(_QUEUE_SIZE)
        self.disconnected = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin reading; call from inside the event loop."""
        self._task = asyncio.ensure_future(self._run())

    def stop(self) -> None:
        """Stop reading (the call is over)."""
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        while True:
            event = await self._receive()
            kind = event["type"]
            if kind == "http.request":
                if event.get("body"):
                    await self._queue.put(event["body"])
                if not event.get("more_body", False):
                    await self._queue.put(None)
            elif kind == "websocket.receive":
                text = event.get("text")
                # An empty text frame is the client's half-close: no more requests.
                await self._queue.put(None if text == "" else text or event.get("bytes") or b"")
            elif kind in ("http.disconnect", "websocket.disconnect"):
                self.disconnected = True
                _put_nowait_end(self._queue)
                self._on_disconnect()
                return

    async def payloads(self) -> AsyncIterator[bytes | str]:
        """Body chunks or frames until the body ends, the client half-closes or disconnects."""
        while True:
            item = await self._queue.get()
            if item is None:
                return
            yield item

    async def read_body(self, limit: int, timeout: float) -> bytes:
        """The whole request body; 413 past ``limit`` bytes, 408 if it takes over ``timeout``."""
        try:
            return await slow_reads().within(timeout, self._read_body(limit))
        except TimeoutError:
            raise body_too_slow(timeout) from None

    async def _read_body(self, limit: int) -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in self.payloads():
            assert isinstance(chunk, bytes)
            size += len(chunk)
            if size > limit:
                raise body_too_large(limit)
            chunks.append(chunk)
        return b"".join(chunks)


def _put_nowait_end(queue: asyncio.Queue[bytes | str | None]) -> None:
    # A full queue means the reader is behind; drop one chunk rather than block the pump forever.
    if queue.full():
        queue.get_nowait()
    queue.put_nowait(None)


async def ndjson_messages(
    chunks: AsyncIterator[bytes | str],
    message_type: type[message.Message],
    options: JsonOptions,
    line_limit: int,
) -> AsyncIterator[message.Message]:
    """Request messages from an NDJSON body (or JSON text frames), parsed as they arrive."""
    buffer = b""
    line_number = 0
    async for chunk in chunks:
        buffer += chunk.encode() if isinstance(chunk, str) else chunk
        if isinstance(chunk, str):
            buffer += b"\n"  # each WebSocket frame is one message
        *lines, buffer = buffer.split(b"\n")
        if len(buffer) > line_limit:
            raise body_too_large(line_limit)
        for line in lines:
            line_number += 1
            if len(line) > line_limit:  # one request message (or frame) over the body limit
                raise body_too_large(line_limit)
            if line.strip():
                yield _parse_line(line, message_type, options, line_number)
    if buffer.strip():
        yield _parse_line(buffer, message_type, options, line_number + 1)


def _parse_line(
    line: bytes, message_type: type[message.Message], options: JsonOptions, number: int
) -> message.Message:
    what = f"request message {number}"
    msg = message_type()
    parse_into(load_json(line, what), msg, options, what)
    return msg


@dataclass(frozen=True)
class Framing:
    """How a stream of replies is written: its content type and how each frame looks."""

    content_type: bytes
    result_prefix: bytes
    error_prefix: bytes
    suffix: bytes
    # Sent on an idle stream every heartbeat interval; clients skip it.
    keepalive: bytes
    # Sent as soon as the call is accepted (SSE); NDJSON starts with the first reply or after a
    # short wait (app.settings.limits.STREAM_HEADERS_WAIT_SECONDS), so that a request refused while
    # the servicer checks it still gets its own HTTP status.
    opening: bytes = b""
    # Frames carry the event revision they stand for (SSE ``id:``, for ``Last-Event-ID``).
    ids: bool = False

    def frame(self, rendered: bytes, event_id: int = 0) -> bytes:
        """One reply frame around its rendered ``{"result": ...}`` JSON."""
        if event_id and self.ids:
            return b"id: %d\n" % event_id + self.result_prefix + rendered + self.suffix
        return self.result_prefix + rendered + self.suffix

    def error(self, error: GatewayError, options: JsonOptions) -> bytes:
        """The final frame of a stream that failed."""
        status = error.status_dict(options.proto_names)
        return self.error_prefix + dump_json({"error": status}) + self.suffix


# An empty line is NDJSON's keepalive: a reader of JSON lines skips blank ones.
NDJSON = Framing(b"application/x-ndjson", b"", b"", b"\n", keepalive=b"\n")
# An EventSource reports "open" only once headers arrive, and a subscription may wait long for
# its first event: SSE answers at once, and later failures are ``error`` events.
SSE = Framing(
    b"text/event-stream",
    b"data: ",
    b"event: error\ndata: ",
    b"\n\n",
    keepalive=b": keepalive\n\n",
    opening=b": open\n\n",
    ids=True,
)


def framing_for(accept: str) -> Framing:
    """SSE when the client asks for ``text/event-stream``, NDJSON otherwise."""
    return SSE if "text/event-stream" in accept else NDJSON
