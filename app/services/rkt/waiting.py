"""Waiting for the next store event (or commit) or a moment, whichever comes first, without
losing any.

``asyncio.wait_for(anext(watch), t)`` would cancel the watch's pending read on a timeout (and
with it the watch); :class:`NextEvent` keeps that read pending across timeouts instead.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Generic, Protocol, TypeVar

from app.calls import stream_position


class _Positioned(Protocol):
    @property
    def revision(self) -> int: ...


T = TypeVar("T", bound=_Positioned)


class NextEvent(Generic[T]):
    """Reads a store watch (of events or of commits) one at a time, each read bounded by an
    optional timeout."""

    def __init__(self, events: AsyncIterator[T]) -> None:
        self._events = events
        self._pending: asyncio.Future[T] | None = None

    async def within(self, timeout: float | None) -> T | None:
        """The next event, or None if ``timeout`` seconds pass first (None: wait for one)."""
        if timeout is None and self._pending is None:
            # Nothing to bound: read in this task (a thousand streams woken by one write each
            # save a task and its wake-up).
            return await anext(self._events)
        if self._pending is None:
            self._pending = asyncio.ensure_future(anext(self._events))
        done, _ = await asyncio.wait({self._pending}, timeout=timeout)
        if self._pending not in done:
            return None
        event, self._pending = self._pending.result(), None
        # The read ran in a task of its own: the caller's task marks the event it hands on.
        stream_position.mark(event.revision)
        return event

    async def close(self) -> None:
        """Drop the pending read (before the watch itself is closed)."""
        if self._pending is not None:
            self._pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await self._pending
            self._pending = None
