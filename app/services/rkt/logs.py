"""A pod's log: its lifecycle lines (one per transition) interleaved with its app's simulated
output (:mod:`app.services.rkt.app_output`), and following both as they grow.

Limits: one reply holds at most ``MAX_LOG_LINES`` lines (``lines`` 0 means "all", up to that
many, the latest); a follow sends the app's new lines about every ``interval`` while it runs.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from app.services.kudo.records import UP, InstanceRecord
from app.services.rkt.app_output import app_lines
from app.services.rkt.pods import LogLine, log_lines, log_prefix
from app.services.rkt.waiting import NextEvent
from app.store import Event, EventType
from gen.scheduler import scheduler_pb2 as spb

MAX_LOG_LINES = 10_000
# The app writes a line about every two simulated steps, but never more than 20 a second.
MIN_INTERVAL_NS = 50_000_000


def output_interval_ns(step_seconds: float) -> int:
    """How far apart (on average) the simulated app's lines are."""
    return max(MIN_INTERVAL_NS, int(2 * step_seconds * 1e9))


class PodLog:
    """One pod's log within a time window (nanoseconds; ``until_ns`` 0 means open-ended)."""

    def __init__(self, interval_ns: int, since_ns: int, until_ns: int) -> None:
        self.interval_ns = interval_ns
        self.since_ns = since_ns
        self.until_ns = until_ns

    def _end(self, now_ns: int) -> int:
        return min(now_ns, self.until_ns) if self.until_ns else now_ns

    def _inside(self, at_ns: int) -> bool:
        return at_ns >= self.since_ns and (not self.until_ns or at_ns < self.until_ns)

    def lines(
        self, instance: InstanceRecord, start_ns: int, end_ns: int, after_seq: int, limit: int
    ) -> list[LogLine]:
        """Lifecycle lines after ``after_seq`` and app lines in ``[start_ns, end_ns)``, merged
        in time order, the latest ``limit``."""
        lifecycle = [
            line
            for line in log_lines(instance, after_seq)
            if self._inside(line.at_ns) and line.at_ns < end_ns
        ]
        start = max(start_ns, self.since_ns)
        output = [
            LogLine(at, f"{log_prefix(at, instance.name, node)} {text}")
            for at, node, text in app_lines(instance, self.interval_ns, start, end_ns, limit)
        ]
        merged = sorted([*lifecycle, *output], key=lambda line: line.at_ns)
        return merged[-limit:]

    def first(self, instance: InstanceRecord, limit: int) -> tuple[list[LogLine], int]:
        """The existing lines, and the moment they reach (where following continues)."""
        end = self._end(time.time_ns())
        return self.lines(instance, 0, end, 0, min(limit or MAX_LOG_LINES, MAX_LOG_LINES)), end

    async def follow(
        self, instance: InstanceRecord, events: AsyncIterator[Event], cursor_ns: int
    ) -> AsyncIterator[list[LogLine]]:
        """New lines as the pod changes and its app writes, until the window closes or the pod
        is garbage-collected."""
        seen = instance.history[-1].seq if instance.history else 0
        waiting = NextEvent(events)
        try:
            while True:
                now = time.time_ns()
                if self.until_ns and now >= self.until_ns:
                    return
                # While the app is up it writes on its own: wake up to send its lines.
                timeout = self.interval_ns / 1e9 if instance.status in UP else None
                if self.until_ns:
                    left = (self.until_ns - now) / 1e9
                    timeout = left if timeout is None else min(timeout, left)
                event = await waiting.within(timeout)
                if event and event.key == instance.id and event.type is not EventType.DELETED:
                    instance = InstanceRecord.from_bytes(event.data)
                end = self._end(time.time_ns())
                new = self.lines(instance, cursor_ns, end, seen, MAX_LOG_LINES)
                cursor_ns = end
                seen = instance.history[-1].seq if instance.history else seen
                if new:
                    yield new
                if instance.status == spb.TERMINATED:
                    return
        finally:
            await waiting.close()
