"""A simulated Ceph cluster run by the Koor operator on Kubernetes, observed at a clock step.

Everything is a pure function of a :class:`StorageSpec` (plain, persistable data with a seed and
the step the cluster was created) and the step observed: the same spec and step always give the
same numbers, and a restarted server sees the cluster exactly where it left it.

The model, in clock steps (one step is a simulated minute by default, ``steps_per_day=1440``):

- Placement: ``node_count`` nodes with ``osds_per_node`` OSDs each; mons ``a, b, c`` on the first
  nodes, mgrs ``a, b``, MDS ``myfs-a`` (active) and ``myfs-b`` (standby-replay), RGWs
  ``my-store-a, my-store-b`` spread over the nodes. Every pool is replicated with size 3,
  min_size 2, one replica per host.
- Outages: time is cut into windows of ``outage_window_steps``. In each window every daemon
  crashes with chance ``daemon_crash_chance`` and every node reboots with chance
  ``node_reboot_chance``; start and length come from a hash of (seed, subject, window), and an
  outage never crosses its window. A daemon is down while it has crashed or its node is down; a
  crash is listed in ``crashes`` for one simulated day. An OSD down for more than
  ``osd_out_steps`` is marked out, and in again when it returns.
- Placement groups: a PG is inactive with two or more replicas on down OSDs, degraded with one,
  and recovering for a while after an OSD comes back (as long as it was away, at most
  ``recovery_steps``) — expected counts under uniform placement. ``active_clean`` is the rest.
- Client I/O follows a daily curve, ``mean * (1 + daily_swing * sin(2π(t/day - 0.375)))``,
  busiest at 15:00 of the simulated day. A share ``retained_write_fraction`` of written bytes is
  new data; data older than ``retention_days`` expires. Stored data is therefore the integral of
  the write curve over the retention window (closed form), capped at Ceph's full ratio, so usage
  grows with time and stays consistent with the reported write rate.
- Raw usage = 1 % BlueStore overhead of the raw capacity + 3 × stored data; ``total`` is the raw
  capacity of every OSD; ``available = total - used``.
- Health follows Ceph's checks: HEALTH_ERR on lost mon quorum, inactive PGs, a full cluster or
  no MDS; HEALTH_WARN on a down mon, mgr, MDS, OSD or host (Ceph has no check for RGWs),
  degraded PGs, a nearfull cluster or a crash in the last simulated hour; HEALTH_OK otherwise.

The cluster's shape (spec, constants, placement) is :mod:`app.sim.storage_spec`; its outages are
planned by :mod:`app.sim.storage_outages`. This module knows no API: the stats service's replies
(with the simulated versions and image hashes they report) are built from its snapshots by
:mod:`app.services.koor.replies`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations

from app.sim.storage_outages import Interval, inside, window_plan
from app.sim.storage_spec import (
    BLUESTORE_OVERHEAD,
    FULL_RATIO,
    MIN_SIZE,
    NEARFULL_RATIO,
    PEAK_PHASE,
    POOLS,
    REPLICAS,
    Daemon,
    GiB,
    StorageSpec,
    daemons_of,
    node_name,
)


@dataclass(frozen=True)
class CrashReport:
    """A daemon crash as ``ceph crash ls`` lists it."""

    daemon: str
    node: str
    step: int
    cause: str


@dataclass(frozen=True)
class StorageSnapshot:
    """The storage cluster at one step: who is up, what is stored, how busy, how healthy."""

    spec: StorageSpec
    step: int
    age: int
    nodes_up: tuple[bool, ...]
    daemons: tuple[Daemon, ...]
    daemons_up: tuple[bool, ...]
    osds_in: tuple[bool, ...]
    stored_bytes: int
    raw_used: int
    raw_total: int
    pg_states: Mapping[str, int]
    client_read: float
    client_write: float
    crashes: tuple[CrashReport, ...]
    health_checks: tuple[str, ...]
    status: str
    uptime_ratio: float
    mon_updated_step: int
    mgr_updated_step: int
    osd_up_updated_step: int
    osd_in_updated_step: int

    @property
    def raw_available(self) -> int:
        """Raw bytes still free."""
        return self.raw_total - self.raw_used

    @property
    def pg_total(self) -> int:
        """Placement groups over every pool."""
        return sum(self.pg_states.values())

    def up(self, kind: str) -> list[Daemon]:
        """The daemons of ``kind`` that are up, in placement order."""
        return [
            d for d, up in zip(self.daemons, self.daemons_up, strict=True) if up and d.kind == kind
        ]

    def count(self, kind: str) -> int:
        """How many daemons of ``kind`` the cluster has."""
        return sum(1 for d in self.daemons if d.kind == kind)

    @property
    def mon_quorum(self) -> list[str]:
        """Names of the mons in quorum; empty when fewer than a majority are up."""
        up = [d.name for d in self.up("mon")]
        return up if len(up) > self.spec.mon_count // 2 else []


def _written_bytes(spec: StorageSpec, first: float, last: float) -> float:
    """Client bytes written between absolute steps ``first`` and ``last`` (exact integral)."""
    day = spec.steps_per_day

    def antiderivative(x: float) -> float:
        return x - spec.daily_swing * day / (2 * math.pi) * math.cos(
            2 * math.pi * (x / day - PEAK_PHASE)
        )

    seconds_per_step = 86400 / day
    return (
        spec.mean_client_write * seconds_per_step * (antiderivative(last) - antiderivative(first))
    )


def _load(spec: StorageSpec, step: int) -> float:
    """The daily curve's factor at ``step``: 1 on average, busiest at 15:00."""
    return 1 + spec.daily_swing * math.sin(2 * math.pi * (step / spec.steps_per_day - PEAK_PHASE))


def _stored_bytes(spec: StorageSpec, age: int) -> int:
    capacity = spec.raw_capacity
    ceiling = (FULL_RATIO * capacity - BLUESTORE_OVERHEAD * capacity) / REPLICAS
    initial = spec.initial_fill * capacity / REPLICAS
    retention = spec.retention_days * spec.steps_per_day
    start = spec.created_step + max(0.0, age - retention)
    new = spec.retained_write_fraction * _written_bytes(spec, start, spec.created_step + age)
    return int(max(0.0, min(ceiling, initial + new)))


def _replicas_down_distribution(spec: StorageSpec, down_per_node: Sequence[int]) -> list[float]:
    """P(a PG has j replicas on down OSDs), j = 0..3, one replica on each of 3 random hosts."""
    chances = [down / spec.osds_per_node for down in down_per_node]
    totals = [0.0] * (REPLICAS + 1)
    trios = list(combinations(range(spec.node_count), REPLICAS))
    for trio in trios:
        dist = [1.0] + [0.0] * REPLICAS
        for host in trio:
            q = chances[host]
            dist = [
                dist[j] * (1 - q) + (dist[j - 1] * q if j else 0.0) for j in range(REPLICAS + 1)
            ]
        totals = [t + d for t, d in zip(totals, dist, strict=True)]
    return [t / len(trios) for t in totals]


def _last_change(
    spec: StorageSpec,
    age: int,
    indexes: Sequence[int],
    transitions_of: Callable[[Sequence[Interval]], list[int]],
) -> int:
    """The latest step ≤ ``age`` at which one of the daemons changed state (else creation)."""
    window = age // spec.outage_window_steps
    while window >= 0:
        plan = window_plan(spec, window)
        points = [p for i in indexes for p in transitions_of(plan.down[i]) if p <= age]
        if points:
            return max(points)
        window -= 1
    return 0


def _up_transitions(intervals: Sequence[Interval]) -> list[int]:
    return [p for interval in intervals for p in interval]


def observe(spec: StorageSpec, step: int) -> StorageSnapshot:
    """The storage cluster as it is at clock step ``step`` (at creation, if earlier)."""
    step = max(step, spec.created_step)
    age = step - spec.created_step
    window = age // spec.outage_window_steps
    plan = window_plan(spec, window)
    daemons = daemons_of(spec)
    nodes_up = tuple(not inside(age, [r] if r else []) for r in plan.reboots)
    daemons_up = tuple(not inside(age, down) for down in plan.down)
    out = spec.osd_out_steps

    def out_intervals(down: Sequence[Interval]) -> list[Interval]:
        return [(s + out, e) for s, e in down if e - s > out]

    osd_index = [i for i, d in enumerate(daemons) if d.kind == "osd"]
    osds_in = tuple(not inside(age, out_intervals(plan.down[i])) for i in osd_index)

    # Placement groups.
    pg_total = sum(pgs for _, pgs in POOLS)
    down_per_node = [0] * spec.node_count
    for i in osd_index:
        if not daemons_up[i]:
            down_per_node[daemons[i].node] += 1
    if any(down_per_node):
        dist = _replicas_down_distribution(spec, down_per_node)
        inactive = round(pg_total * sum(dist[REPLICAS - MIN_SIZE + 1 :]))
        degraded = min(
            pg_total - inactive, round(pg_total * sum(dist[1 : REPLICAS - MIN_SIZE + 1]))
        )
    else:
        inactive = degraded = 0
    recovering_share = 0.0
    for i in osd_index:
        if not daemons_up[i]:
            continue
        for w in (window - 1, window):
            for start, end in window_plan(spec, w).down[i] if w >= 0 else ():
                catch_up = min(end - start, spec.recovery_steps)
                if end <= age < end + catch_up:
                    recovering_share += (REPLICAS / spec.osd_count) * (1 - (age - end) / catch_up)
    recovering = min(pg_total - inactive - degraded, round(pg_total * recovering_share))
    pg_states = {
        "active+clean": pg_total - inactive - degraded - recovering,
        "active+undersized+degraded": degraded,
        "active+recovering": recovering,
        "undersized+degraded+peered": inactive,
    }

    # Data and client I/O.
    stored = _stored_bytes(spec, age)
    raw_total = spec.raw_capacity
    raw_used = int(BLUESTORE_OVERHEAD * raw_total) + REPLICAS * stored
    load = _load(spec, step)

    # Crashes of the last simulated day, oldest first.
    day = spec.steps_per_day
    crashes = []
    for w in range(max(0, (age - day) // spec.outage_window_steps), window + 1):
        past = window_plan(spec, w)
        for d, crash, cause in zip(daemons, past.crashes, past.causes, strict=True):
            if crash and age - day < crash[0] <= age:
                crashes.append(
                    CrashReport(d.id, node_name(spec, d.node), spec.created_step + crash[0], cause)
                )
    crashes.sort(key=lambda c: (c.step, c.daemon))

    # Uptime over the last simulated day (inclusive of this step).
    first = max(0, age - day + 1)
    span = age - first + 1
    down_steps = 0
    width = spec.outage_window_steps
    for w in range(first // width, window + 1):
        past = window_plan(spec, w)
        if first <= w * width and (w + 1) * width <= age + 1:
            down_steps += past.down_steps
            continue
        for down in past.down:
            down_steps += sum(max(0, min(e, age + 1) - max(s, first)) for s, e in down)
    uptime_ratio = 1 - down_steps / (span * len(daemons))

    def indexes(kind: str) -> list[int]:
        return [i for i, d in enumerate(daemons) if d.kind == kind]

    def in_transitions(down: Sequence[Interval]) -> list[int]:
        return _up_transitions(out_intervals(down))

    created = spec.created_step
    snapshot = StorageSnapshot(
        spec=spec,
        step=step,
        age=age,
        nodes_up=nodes_up,
        daemons=daemons,
        daemons_up=daemons_up,
        osds_in=osds_in,
        stored_bytes=stored,
        raw_used=raw_used,
        raw_total=raw_total,
        pg_states=pg_states,
        client_read=spec.mean_client_read * load,
        client_write=spec.mean_client_write * load,
        crashes=tuple(crashes),
        health_checks=(),
        status="",
        uptime_ratio=uptime_ratio,
        mon_updated_step=created + _last_change(spec, age, indexes("mon"), _up_transitions),
        mgr_updated_step=created + _last_change(spec, age, indexes("mgr"), _up_transitions),
        osd_up_updated_step=created + _last_change(spec, age, osd_index, _up_transitions),
        osd_in_updated_step=created + _last_change(spec, age, osd_index, in_transitions),
    )
    # Health checks read the finished numbers, so they are filled in last.
    checks = _health_checks(snapshot)
    status = "HEALTH_OK"
    if checks:
        status = "HEALTH_ERR" if _ERROR_CHECKS.intersection(checks) else "HEALTH_WARN"
    return replace(snapshot, health_checks=checks, status=status)


_ERROR_CHECKS = frozenset({"MON_QUORUM_LOST", "PG_AVAILABILITY", "OSD_FULL", "MDS_ALL_DOWN"})


def _health_checks(s: StorageSnapshot) -> tuple[str, ...]:
    """Ceph health check codes that apply (``MON_QUORUM_LOST`` is ours: Ceph goes silent)."""
    checks = []
    if not s.mon_quorum:
        checks.append("MON_QUORUM_LOST")
    elif len(s.up("mon")) < s.count("mon"):
        checks.append("MON_DOWN")
    if not s.up("mgr"):
        checks.append("MGR_DOWN")
    if not all(s.nodes_up):
        checks.append("OSD_HOST_DOWN")
    if len(s.up("osd")) < s.count("osd"):
        checks.append("OSD_DOWN")
    if not s.up("mds"):
        checks.append("MDS_ALL_DOWN")
    elif len(s.up("mds")) < s.count("mds"):
        checks.append("MDS_INSUFFICIENT_STANDBY")
    if s.pg_states["undersized+degraded+peered"]:
        checks.append("PG_AVAILABILITY")
    if s.pg_states["active+undersized+degraded"] or s.pg_states["active+recovering"]:
        checks.append("PG_DEGRADED")
    ratio = s.raw_used / s.raw_total
    if ratio >= FULL_RATIO - 1e-9:  # the cap is the full ratio itself, up to rounding
        checks.append("OSD_FULL")
    elif ratio >= NEARFULL_RATIO:
        checks.append("OSD_NEARFULL")
    recent = s.spec.steps_per_day // 24
    if any(s.step - c.step < recent for c in s.crashes):
        checks.append("RECENT_CRASH")
    return tuple(checks)


def meets_minimum_resources(spec: StorageSpec) -> bool:
    """This simulation's rule: at least 3 nodes, 12 CPU cores, 32 GiB of memory and 3 OSDs."""
    return (
        spec.node_count >= 3
        and spec.node_count * spec.node_cpu >= 12
        and spec.node_count * spec.node_memory_bytes >= 32 * GiB
        and spec.osd_count >= 3
    )
