"""Waking background loops when stored objects change, instead of polling the store."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection

from app.store import ObjectStore


class StoreChanges:
    """Set whenever an object of ``kinds`` is written after ``revision``; run :meth:`follow`."""

    def __init__(self, store: ObjectStore, kinds: Collection[str], revision: int) -> None:
        self._store = store
        self._kinds = tuple(kinds)
        self._revision = revision
        self._changed = asyncio.Event()

    async def follow(self) -> None:
        """Watch the event log until cancelled."""
        async with contextlib.aclosing(self._store.watch(self._kinds, self._revision)) as events:
            async for _ in events:
                self._changed.set()

    async def wait(self, timeout: float | None = None) -> None:
        """Return after a change (or ``timeout`` seconds), and forget the changes seen so far."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)
        self._changed.clear()
