"""The queue for a turn at writing: callers' writes before background work's, which still gets
its share.

Background jobs (the reconciler, the simulations, housekeeping) mark their tasks with
:func:`mark_background`; a write transaction begun in such a task (or in a task it started)
waits behind every caller's write that is waiting. Taken in arrival order, a caller's create
waited behind the reconciler's sixteen transactions in flight, each writing a new cluster's
machines. So that a storm of writes slows background work down but cannot stop it, when both
wait every ``BACKGROUND_EVERY``-th turn is a background one.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections import deque

BACKGROUND_EVERY = 16

_BACKGROUND = contextvars.ContextVar("portico_background_work", default=False)


def mark_background() -> None:
    """Make the running task, and the tasks it starts from now on, background work."""
    _BACKGROUND.set(True)


class TurnLock:
    """A lock handed from holder to waiter: the longest-waiting caller first, then the
    longest-waiting background task (see the module's docstring)."""

    def __init__(self) -> None:
        self._held = False
        self._callers: deque[asyncio.Future[None]] = deque()
        self._background: deque[asyncio.Future[None]] = deque()
        self._callers_in_a_row = 0  # turns given to callers while background work waited

    def locked(self) -> bool:
        return self._held

    def callers_waiting(self) -> bool:
        """Whether a caller's write (not background work's) is queued for a turn."""
        return any(not waiter.done() for waiter in self._callers)

    async def acquire(self) -> None:
        if not self._held and not self._callers and not self._background:
            self._held = True
            return
        lane = self._background if _BACKGROUND.get() else self._callers
        waiter = asyncio.get_running_loop().create_future()
        lane.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed the lock just as it was cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):
                    lane.remove(waiter)
            raise

    def release(self) -> None:
        """Hand the lock to the next waiter, or free it if none is left."""
        waiter = self._next()
        if waiter is None:
            self._held = False
        else:
            waiter.set_result(None)

    def _next(self) -> asyncio.Future[None] | None:
        for lane in (self._callers, self._background):
            while lane and lane[0].done():  # cancelled meanwhile
                lane.popleft()
        if self._background and (
            not self._callers or self._callers_in_a_row >= BACKGROUND_EVERY - 1
        ):
            self._callers_in_a_row = 0
            return self._background.popleft()
        if self._callers:
            self._callers_in_a_row += bool(self._background)
            return self._callers.popleft()
        return None
