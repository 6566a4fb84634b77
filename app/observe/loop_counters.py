"""Hot-path recording: plain numbers on the event loop, added into Prometheus once a second.

``prometheus_client`` takes a lock per increment (and with several workers writes a memory-mapped
file), several of them per histogram observation: a few microseconds a call, a tenth of a small
call's whole cost. Calls and store operations instead count into plain Python numbers owned by
the event loop's thread, and :func:`flush` adds them into the Prometheus metrics: once a second
(``main`` runs :func:`flush_every`) and before each scrape this process answers. A scrape
answered by one worker may so miss up to a second of another worker's calls, never lose them.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from typing import Any

FLUSH_SECONDS = 1.0


class LocalCounter:
    """A counter child's increments, kept until the next flush (one per child: see
    :func:`counter`)."""

    __slots__ = ("child", "pending")

    def __init__(self, child: Any) -> None:
        self.child = child
        self.pending = 0

    def flush(self) -> None:
        if self.pending:
            pending, self.pending = self.pending, 0
            self.child.inc(pending)


class LocalHistogram:
    """A histogram child's observations as bucket counts and a sum, kept until the next flush."""

    __slots__ = ("bounds", "child", "counts", "total")

    def __init__(self, child: Any) -> None:
        self.child = child
        # The child's upper bounds, +Inf last; an observation goes in the first bound >= it,
        # as Histogram.observe puts it.
        self.bounds: list[float] = list(child._upper_bounds)
        self.counts = [0] * len(self.bounds)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value

    def flush(self) -> None:
        counts = self.counts
        if not any(counts):
            return
        self.counts = [0] * len(counts)
        total, self.total = self.total, 0.0
        # prometheus_client keeps per-bucket (not cumulative) values and a sum, and has no
        # public way to add many observations at once; these are the values observe() adds to.
        buckets = self.child._buckets
        for index, count in enumerate(counts):
            if count:
                buckets[index].inc(count)
        self.child._sum.inc(total)


# One local per Prometheus child, whoever asks for it: a process building several servers' (or
# gateways') telemetry shares their children, and these with them, instead of flushing more
# of them every second for as long as it runs.
_COUNTERS: dict[Any, LocalCounter] = {}
_HISTOGRAMS: dict[Any, LocalHistogram] = {}


def counter(child: Any) -> LocalCounter:
    """The local counter of Prometheus counter ``child``."""
    local = _COUNTERS.get(child)
    if local is None:
        local = _COUNTERS[child] = LocalCounter(child)
    return local


def histogram(child: Any) -> LocalHistogram:
    """The local histogram of Prometheus histogram ``child``."""
    local = _HISTOGRAMS.get(child)
    if local is None:
        local = _HISTOGRAMS[child] = LocalHistogram(child)
    return local


def flush() -> None:
    """Add everything recorded since the last flush into the Prometheus metrics."""
    for counter in _COUNTERS.values():
        counter.flush()
    for histogram in _HISTOGRAMS.values():
        histogram.flush()


async def flush_every(seconds: float = FLUSH_SECONDS) -> None:
    """Flush once every ``seconds`` until cancelled (and once more then)."""
    try:
        while True:
            await asyncio.sleep(seconds)
            flush()
    finally:
        flush()
