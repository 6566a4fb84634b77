"""A positive signal that the runtime's event streams are listening: the revisions they start at."""

from __future__ import annotations

from typing import Any

from tests.harness import Running, eventually


def stream_starts(server: Running) -> list[int]:
    """The revisions the runtime's event streams start from, appended as each stream has its
    own: from then on it sees every later write (whether it reads the shared feed or
    translates for itself)."""
    streams: Any = server.portico.servicers["v1alpha.PublicAPI"].events
    starts: list[int] = []
    start, feed_after = streams._stream_start, streams._feed_after

    async def recorded() -> Any:
        found = await start()
        starts.append(found.revision)
        return found

    async def joined(feed: Any) -> int:
        after = int(await feed_after(feed))
        starts.append(after)
        return after

    streams._stream_start, streams._feed_after = recorded, joined
    return starts


async def listening(starts: list[int], streams: int = 1) -> None:
    """Return once ``streams`` event streams have read where they start."""

    async def started() -> bool:
        return len(starts) >= streams

    await eventually(started, what=f"{streams} event stream(s) listening")
