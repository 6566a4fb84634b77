"""HTTP connections that a slow client cannot hold open, that write in batches, and that tell a
call when its client goes away.

uvicorn bounds the wait between requests (keep-alive) but not a request's head: a client sending
its headers a byte at a time holds a connection and its memory as long as it likes. This
protocol gives every request head a deadline from the connection's opening (or, on a
kept-alive connection, from the next request's first byte), and answers ``408`` and closes when
it passes. The wait for a kept-alive connection's next request (uvicorn's
``timeout_keep_alive``) is a deadline too, closing it quietly. Both sit in one
:class:`app.gateway.http.slow_reads.SweptDeadlines` table that a sweep checks once a second, so they
pass up to a second late: a timer per request (uvicorn arms one for keep-alive after every
response and cancels it at the next request) cost ~2 µs, more than the rest of the
connection's own work on it. Bodies are bounded in the gateway
(:func:`app.gateway.http_io.read_body`), where the call is known.

A request head is bounded in size too, as Envoy bounds it under pyvoy, by the same numbers
(``MAX_REQUEST_HEAD_BYTES`` and ``MAX_REQUEST_HEADERS`` of :mod:`app.settings.limits`):
httptools (llhttp) has no limit of its own, and a megabyte header or ten thousand headers were
read, kept in the scope and answered. The parser's callbacks count the target's and each
field's bytes as they come (trailers of a chunked body add to the same count); a field still
being read is counted in the reads that carry it, since httptools hands it over only whole.
Past the limit the answer is ``431`` and the connection closes.

Its writes go through :mod:`app.server.on_uvicorn.write_batches`: a loop turn's replies leave
together.

A call whose work goes on elsewhere (a proxy's upstream) learns that its client went away from
the connection itself: ``scope["extensions"][ON_DISCONNECT]["watch"](callback)`` runs
``callback()`` once the connection is lost (soon, if it already is) and returns what forgets
it. Watching ``receive`` for the disconnect instead took a task of its own per call, and
another to run the call beside it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.gateway.http.slow_reads import SweptDeadlines
from app.gateway.invoker import ON_DISCONNECT
from app.server.on_uvicorn.write_batches import WriteBatches
from app.settings.limits import MAX_REQUEST_HEAD_BYTES, MAX_REQUEST_HEADERS


def _refusal(status: bytes, text: bytes) -> bytes:
    return (
        b"HTTP/1.1 " + status + b"\r\n"
        b"content-type: text/plain; charset=utf-8\r\n"
        b"content-length: " + str(len(text)).encode() + b"\r\n"
        b"connection: close\r\n\r\n" + text
    )


_TIMED_OUT = _refusal(b"408 Request Timeout", b"request headers not received in time")
_TOO_LARGE = _refusal(
    b"431 Request Header Fields Too Large",
    b"request headers exceed %d bytes or %d fields" % (MAX_REQUEST_HEAD_BYTES, MAX_REQUEST_HEADERS),
)
# httptools hands a field over only once it is whole: a head still under way after a read is
# refused once its later reads come to this much (twice the limit, so that the colons, spaces and
# line ends of a head just under the limit never count against it).
_HEAD_READS_LIMIT = 2 * MAX_REQUEST_HEAD_BYTES


class _HeadTooLarge(Exception):
    """Raised in a parser callback to stop parsing a head past its limit."""


def http_protocol(seconds: float) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol, refusing request heads that take over ``seconds`` (checked
    once a second) or pass the head's limits, its writes batched per loop turn."""
    # One server's connections share one loop, and these with it (made at its first connection).
    batches: WriteBatches | None = None
    deadlines: SweptDeadlines[HeadDeadlineProtocol] | None = None

    class HeadDeadlineProtocol(HttpToolsProtocol):
        def connection_made(self, transport: Any) -> None:
            nonlocal batches, deadlines
            if batches is None or deadlines is None:
                batches = WriteBatches(self.loop)
                deadlines = SweptDeadlines(self.loop, HeadDeadlineProtocol.deadline_passed)
            self._deadlines = deadlines
            self._idle = False  # between requests, kept alive: its deadline is keep-alive's
            # The request head's bytes the limit still allows, and whether one is being read
            # (from its first byte to its end) with what its later reads brought.
            self._head_left = MAX_REQUEST_HEAD_BYTES
            self._in_head = False
            self._head_reads = 0
            self._too_large = False
            self._lost = False
            self._on_lost: list[Callable[[], object]] = []
            # An ASGI extension is a dict of its own: this one holds the function. One per
            # connection, handed to each of its requests.
            self._extensions: dict[str, dict[object, object]] = {
                ON_DISCONNECT: {"watch": self.on_disconnect}
            }
            # It answers all a Transport does (what it does not hold, by delegation).
            super().connection_made(cast(asyncio.Transport, batches.wrap(transport)))
            deadlines.arm(self, seconds)

        def data_received(self, data: bytes) -> None:
            # uvicorn's, but for heads past their limit (and without its keep-alive timer,
            # which this protocol never arms).
            if self._in_head:  # a head begun in an earlier read: all of this one is head
                self._head_reads += len(data)
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserError:
                if self._too_large:
                    self._refuse(_TOO_LARGE)
                else:
                    self.logger.warning("Invalid HTTP request received.")
                    self.send_400_response("Invalid HTTP request received.")
                return
            except httptools.HttpParserUpgrade:
                if self._should_upgrade():
                    self.handle_websocket_upgrade()
                else:
                    self._unsupported_upgrade_warning()
                return
            if self._in_head and self._head_reads > _HEAD_READS_LIMIT:
                self._refuse(_TOO_LARGE)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._head_left = MAX_REQUEST_HEAD_BYTES
            self._in_head = True
            self._head_reads = 0
            self.scope["extensions"] = self._extensions
            # A later request's head has its deadline from its first byte; the connection's
            # first request keeps the one armed when it opened.
            if self._idle or self not in self._deadlines:
                self._idle = False
                self._deadlines.arm(self, seconds)

        # uvicorn's two callbacks, counting what they are handed (trailers too).
        def on_url(self, url: bytes) -> None:
            self.url += url
            self._head_left -= len(url)
            if self._head_left < 0:
                self._too_large = True
                raise _HeadTooLarge

        def on_header(self, name: bytes, value: bytes) -> None:
            self._head_left -= len(name) + len(value)
            headers = self.headers
            if self._head_left < 0 or len(headers) >= MAX_REQUEST_HEADERS:
                self._too_large = True
                raise _HeadTooLarge
            name = name.lower()
            if name == b"expect" and value.lower() == b"100-continue":
                self.expect_100_continue = True
            headers.append((name, value))

        def on_headers_complete(self) -> None:
            self._in_head = False
            self._deadlines.disarm(self)
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            # uvicorn's, but for the keep-alive wait: a swept deadline instead of a timer.
            self.server_state.total_requests += 1
            if self.transport.is_closing():
                return
            self.flow.resume_reading()
            if self.pipeline:  # the next request has arrived already
                cycle, app = self.pipeline.pop()
                self._start_asgi_task(cycle, app)
            elif self not in self._deadlines:  # (else its next head is under way)
                self._idle = True
                self._deadlines.arm(self, self.timeout_keep_alive)

        def connection_lost(self, exc: Exception | None) -> None:
            self._deadlines.disarm(self)
            super().connection_lost(exc)
            self._lost = True
            callbacks, self._on_lost = self._on_lost, []
            for callback in callbacks:
                self.loop.call_soon(callback)  # one that fails is logged, the others run

        def on_disconnect(self, callback: Callable[[], object]) -> Callable[[], None]:
            """Run ``callback()`` once this connection is lost; returns what forgets it."""
            if self._lost:
                self.loop.call_soon(callback)
                return _nothing
            self._on_lost.append(callback)
            return lambda: self._forget(callback)

        def _forget(self, callback: Callable[[], object]) -> None:
            if callback in self._on_lost:
                self._on_lost.remove(callback)

        def deadline_passed(self) -> None:
            if self.transport.is_closing():
                return
            # An idle connection is closed quietly, as uvicorn's keep-alive timer closed it.
            if self._idle:
                self.transport.close()
            else:
                self._refuse(_TIMED_OUT)

        def _refuse(self, answer: bytes) -> None:
            """Answer a head refused, when no response is under way, and close."""
            self._in_head = False
            self._deadlines.disarm(self)
            if self.cycle is None or self.cycle.response_complete:
                self.transport.write(answer)
            self.transport.close()

    return HeadDeadlineProtocol


def _nothing() -> None:
    pass
