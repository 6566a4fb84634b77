"""Replies written in one turn of the event loop go out together at its end.

uvicorn writes a reply's head and body with two ``transport.write`` calls, each a ``send``
syscall at once; replies of many connections, computed in the same loop turn, go out one by one
between the Python work of the next. On a loaded server that costs more than the syscalls: every
``send`` wakes the client (or the proxy in front), which reads, sleeps, and is woken again by the
next. Holding what a connection writes until the turn ends sends each reply in one syscall and
all of the turn's replies back to back (measured by ``tests/bench``: see docs/performance.md).

What is held is bounded: a connection holding more than :data:`HOLD_BYTES` writes through at
once, so the transport's own flow control (pause_writing → uvicorn's drain) still sees large
streams; and once :data:`HOLD_CONNECTIONS` connections hold writes, they go out as a burst
there and then, so one event sent to a thousand subscribers reaches the first of them before
the last one's copy is written. A quiet server pays one ``call_soon`` per reply: a reply
leaves in the ready-queue pass that follows its turn, before the loop next waits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger("portico.gateway")

# Past this many bytes held a connection writes through: a turn holds at most this much of a
# stream, and a large write reaches the transport (and its flow control) at once.
HOLD_BYTES = 64 * 1024
# Past this many connections holding writes the turn's batch goes out at once: a turn that
# answers a thousand subscribers of one event sends to the first of them before it has rendered
# for the last (the batching is in sends per burst, not in holding the whole turn).
HOLD_CONNECTIONS = 64


class WriteBatches:
    """The connections of one event loop with writes held for the end of the current turn."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._holding: list[BatchedTransport] = []

    def wrap(self, transport: asyncio.Transport) -> BatchedTransport:
        return BatchedTransport(transport, self)

    def hold(self, transport: BatchedTransport) -> None:
        if not self._holding:
            self._loop.call_soon(self._flush)
        elif len(self._holding) >= HOLD_CONNECTIONS:
            self._flush()  # the flush already scheduled takes the rest of the turn's writes
        self._holding.append(transport)

    def _flush(self) -> None:
        holding, self._holding = self._holding, []
        for transport in holding:
            try:
                transport.flush()
            except Exception:  # one broken connection must not keep the others' replies
                log.exception("writing a held reply failed")


class BatchedTransport:
    """A transport whose writes wait for the end of the loop turn (see the module's text).

    Everything that writes, ends or reports the stream passes through here so that nothing
    overtakes what is held; the rest is the transport's own.
    """

    __slots__ = ("_batches", "_held", "_held_bytes", "_transport")

    def __init__(self, transport: asyncio.Transport, batches: WriteBatches) -> None:
        self._transport = transport
        self._batches = batches
        self._held: list[bytes] = []
        self._held_bytes = 0

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._held:
            self._batches.hold(self)
        self._held.append(data)
        self._held_bytes += len(data)
        if self._held_bytes > HOLD_BYTES:
            self.flush()

    def writelines(self, lines: Iterable[bytes]) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        """Hand what is held to the transport (dropped if the connection has gone)."""
        held = self._held
        if not held:
            return
        self._held = []
        self._held_bytes = 0
        if not self._transport.is_closing():
            self._transport.writelines(held)

    def get_write_buffer_size(self) -> int:
        return self._held_bytes + self._transport.get_write_buffer_size()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = []
        self._held_bytes = 0
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
