"""Calls that arrive while the same work is already running wait for it instead of repeating it.

Used where a burst of callers would otherwise each make the same database read at once: the
calls carrying one token when its cached check falls due, event streams opening together.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class SharedCalls(Generic[T]):
    """At most one run of the work per key at a time; later callers share its result or error."""

    def __init__(self) -> None:
        self._running: dict[Hashable, asyncio.Future[T]] = {}

    async def run(self, key: Hashable, work: Callable[[], Awaitable[T]]) -> T:
        """The result of ``work()``, started now unless a run for ``key`` is already going."""
        running = self._running.get(key)
        if running is None:
            running = asyncio.ensure_future(work())
            self._running[key] = running
            running.add_done_callback(functools.partial(self._finished, key))
        # Shielded: a caller that goes away must not cancel the work the others wait for.
        return await asyncio.shield(running)

    def _finished(self, key: Hashable, running: asyncio.Future[T]) -> None:
        if self._running.get(key) is running:
            del self._running[key]
        if not running.cancelled():
            running.exception()  # retrieved, so work nobody waits for any more is not reported
