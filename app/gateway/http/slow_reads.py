"""A coarse and cheap timeout for reading a request body (and the table of deadlines under it,
which request heads use too: :mod:`app.server.on_uvicorn.connections`).

``asyncio.timeout`` arms a timer per use (a timer handle that copies the context, pushed on the
loop's heap, then cancelled), which costs as much as a small RPC's own work. A body timeout is
tens of seconds and need not fire to the millisecond, so the reads in progress sit in a table
that one sweep a second checks, cancelling the overdue; a read that finishes in time costs two
dictionary operations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")

SWEEP_SECONDS = 1.0  # how late a timeout may fire

K = TypeVar("K", bound=Hashable)


class SweptDeadlines(Generic[K]):
    """Deadlines of one event loop in a table that one sweep a second checks: arming and
    disarming cost a dictionary operation each, and ``expired(key)`` runs for each key overdue
    at a sweep (up to :data:`SWEEP_SECONDS` late)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, expired: Callable[[K], object]) -> None:
        self.loop = loop
        self._expired = expired
        self._due: dict[K, float] = {}
        self._sweeping = False

    def __contains__(self, key: K) -> bool:
        return key in self._due

    def arm(self, key: K, timeout: float) -> None:
        """``key`` expires ``timeout`` seconds from now, unless disarmed before."""
        self._due[key] = self.loop.time() + timeout
        if not self._sweeping:
            self._sweeping = True
            self.loop.call_later(SWEEP_SECONDS, self._sweep)

    def disarm(self, key: K) -> None:
        self._due.pop(key, None)

    def _sweep(self) -> None:
        now = self.loop.time()
        for key in [key for key, due in self._due.items() if due <= now]:
            del self._due[key]
            self._expired(key)
        self._sweeping = bool(self._due)
        if self._sweeping:
            self.loop.call_later(SWEEP_SECONDS, self._sweep)


class SlowReads:
    """The reads of one event loop that must finish by a deadline."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._due: SweptDeadlines[asyncio.Task[object]] = SweptDeadlines(loop, self._expire)
        self._expired: set[asyncio.Task[object]] = set()

    async def within(self, timeout: float, work: Awaitable[T]) -> T:
        """``await work``, or TimeoutError once it has taken over ``timeout`` seconds."""
        task, cancelling = self.enter(timeout)
        try:
            return await work
        except asyncio.CancelledError:
            # Our cancellation becomes the timeout; anyone else's propagates.
            if self.timed_out(task, cancelling):
                raise TimeoutError from None
            raise
        finally:
            self.leave(task)

    # What :meth:`within` does, for a hot path that reads in its own coroutine instead of
    # awaiting another (each coroutine layer on every call's path is measurable).

    def enter(self, timeout: float) -> tuple[asyncio.Task[object], int]:
        """The current task's read starts, due in ``timeout`` seconds: the task, and its
        cancellation count before (for :meth:`timed_out`)."""
        task = asyncio.current_task(self.loop)
        assert task is not None
        self._due.arm(task, timeout)
        return task, task.cancelling()

    def timed_out(self, task: asyncio.Task[object], cancelling: int) -> bool:
        """Whether the CancelledError the task got is this table's (which it takes back)."""
        return task in self._expired and task.uncancel() <= cancelling

    def leave(self, task: asyncio.Task[object]) -> None:
        """The task's read is over, however it ended."""
        self._due.disarm(task)
        self._expired.discard(task)

    def _expire(self, task: asyncio.Task[object]) -> None:
        self._expired.add(task)
        task.cancel()


_by_loop: dict[asyncio.AbstractEventLoop, SlowReads] = {}


def slow_reads() -> SlowReads:
    """The table of the running loop (a process may run several loops, one after another)."""
    loop = asyncio.get_running_loop()
    found = _by_loop.get(loop)
    if found is None:
        for done in [other for other in _by_loop if other.is_closed()]:
            del _by_loop[done]
        found = _by_loop[loop] = SlowReads(loop)
    return found
