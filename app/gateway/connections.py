"""HTTP connections that cannot be held open by a slow client, and write in batches.

uvicorn bounds the wait between requests (keep-alive) but not a request's head: a client sending
its headers a byte at a time holds a connection and its memory as long as it likes. This
protocol gives every request head a deadline from the connection's first byte (or the previous
response), and answers ``408`` and closes when it passes. Bodies are bounded in the gateway
(:func:`app.gateway.http_io.read_body`), where the call is known.

Its writes go through :mod:`app.gateway.write_batches`: a loop turn's replies leave together.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.gateway.write_batches import WriteBatches


def http_protocol(seconds: float) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol, refusing request heads that take over ``seconds``, its
    writes batched per loop turn."""
    batches: WriteBatches | None = None  # one server's connections share one loop

    class HeadDeadlineProtocol(HttpToolsProtocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            nonlocal batches
            if batches is None:
                batches = WriteBatches(self.loop)
            # It answers all a Transport does (what it does not hold, by delegation).
            super().connection_made(cast(asyncio.Transport, batches.wrap(transport)))
            self._arm_head_timer()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._head_timer is None:
                self._arm_head_timer()

        def on_headers_complete(self) -> None:
            self._disarm_head_timer()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_head_timer()
            super().connection_lost(exc)

        def _arm_head_timer(self) -> None:
            self._head_timer = self.loop.call_later(seconds, self._head_too_slow)

        def _disarm_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_too_slow(self) -> None:
            self._head_timer = None
            if self.transport.is_closing():
                return
            if self.cycle is None or self.cycle.response_complete:
                message = b"request headers not received in time"
                self.transport.write(
                    b"HTTP/1.1 408 Request Timeout\r\n"
                    b"content-type: text/plain; charset=utf-8\r\n"
                    b"content-length: " + str(len(message)).encode() + b"\r\n"
                    b"connection: close\r\n\r\n" + message
                )
            self.transport.close()

    return HeadDeadlineProtocol
