"""When the simulated Ceph cluster's daemons crash and its nodes reboot.

Time is cut into windows of ``outage_window_steps``; each window's outages come from hashes of
(seed, subject, window), so any window can be planned on its own, at any time, the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from app.sim.seeded import unit_interval
from app.sim.storage_spec import StorageSpec, daemons_of

Interval = tuple[int, int]  # [start, end) in steps since creation

_CRASH_CAUSES = (
    "SIGABRT in ceph::__ceph_assert_fail",
    "SIGSEGV in tcmalloc::ThreadCache::ReleaseToCentralCache",
    "heartbeat_map is_healthy timed out; the daemon aborted itself",
    "OOMKilled: the container reached its memory limit",
)


@dataclass(frozen=True)
class WindowPlan:
    """Outages of one window: per node, per daemon's own crash, per daemon down (merged)."""

    reboots: tuple[Interval | None, ...]
    crashes: tuple[Interval | None, ...]
    causes: tuple[str, ...]
    down: tuple[tuple[Interval, ...], ...]
    # Daemon-steps down over the whole window: uptime sums these instead of re-walking intervals.
    down_steps: int


def _outage(
    spec: StorageSpec, subject: str, window: int, chance: float, shortest: int, longest: int
) -> Interval | None:
    if unit_interval("outage", spec.seed, subject, window) >= chance:
        return None
    length = shortest + int(
        unit_interval("length", spec.seed, subject, window) * (longest - shortest + 1)
    )
    room = spec.outage_window_steps - length
    start = window * spec.outage_window_steps + int(
        unit_interval("start", spec.seed, subject, window) * room
    )
    return (start, start + length)


def _merge(intervals: Sequence[Interval | None]) -> tuple[Interval, ...]:
    merged: list[Interval] = []
    for start, end in sorted(i for i in intervals if i is not None):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


@lru_cache(maxsize=512)
def window_plan(spec: StorageSpec, window: int) -> WindowPlan:
    reboots = tuple(
        _outage(
            spec,
            f"node/{i}",
            window,
            spec.node_reboot_chance,
            spec.reboot_min_steps,
            spec.reboot_max_steps,
        )
        for i in range(spec.node_count)
    )
    daemons = daemons_of(spec)
    crashes = tuple(
        _outage(
            spec, d.id, window, spec.daemon_crash_chance, spec.crash_min_steps, spec.crash_max_steps
        )
        for d in daemons
    )
    down = tuple(
        _merge((reboots[d.node], crash)) for d, crash in zip(daemons, crashes, strict=True)
    )
    causes = tuple(
        _CRASH_CAUSES[int(unit_interval("cause", spec.seed, d.id, window) * len(_CRASH_CAUSES))]
        for d in daemons
    )
    down_steps = sum(end - start for intervals in down for start, end in intervals)
    return WindowPlan(reboots, crashes, causes, down, down_steps)


def inside(age: int, intervals: Sequence[Interval]) -> bool:
    return any(start <= age < end for start, end in intervals)
