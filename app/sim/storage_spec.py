"""The simulated Ceph cluster's shape: its spec, Ceph's constants, and where each daemon runs.

:mod:`app.sim.storage` describes the model; :mod:`app.sim.storage_outages` plans its outages.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from typing import Any

from app.sim.seeded import digest

KiB, MiB, GiB, TiB = 1024, 1024**2, 1024**3, 1024**4

REPLICAS = 3
MIN_SIZE = 2
FULL_RATIO = 0.95
NEARFULL_RATIO = 0.85
BLUESTORE_OVERHEAD = 0.01
OBJECT_SIZE = 4 * MiB  # RBD and CephFS default object size
VOLUME_SIZE = 256 * GiB  # average RBD image / CephFS subvolume, to count volumes from data
READ_OP_SIZE = 16 * KiB
WRITE_OP_SIZE = 32 * KiB
PEAK_PHASE = 0.375  # sin peaks a quarter day later: 15:00 of the simulated day
ROOK_NAMESPACE = "rook-ceph"

# (pool, pg_num) as Rook's example manifests create them for a block pool, a filesystem and an
# object store.
POOLS: tuple[tuple[str, int], ...] = (
    (".mgr", 1),
    ("replicapool", 128),
    ("myfs-metadata", 32),
    ("myfs-replicated", 64),
    (".rgw.root", 8),
    ("my-store.rgw.control", 8),
    ("my-store.rgw.meta", 8),
    ("my-store.rgw.log", 8),
    ("my-store.rgw.buckets.index", 8),
    ("my-store.rgw.buckets.non-ec", 8),
    ("my-store.rgw.otp", 8),
    ("my-store.rgw.buckets.data", 64),
)


@dataclass(frozen=True)
class StorageSpec:
    """The storage cluster's shape and dynamics; persist it and the cluster resumes exactly."""

    seed: int = 0
    created_step: int = 0
    name: str = "koor-cluster"
    namespace: str = "koor-operator-system"
    node_count: int = 4
    osds_per_node: int = 3
    osd_bytes: int = 4 * TiB
    node_cpu: int = 16
    node_memory_bytes: int = 64 * GiB
    node_ephemeral_bytes: int = 200 * GiB
    mon_count: int = 3
    kube_version: str = "1.31.2"
    steps_per_day: int = 1440
    initial_fill: float = 0.30
    mean_client_read: float = 120.0 * MiB
    mean_client_write: float = 40.0 * MiB
    daily_swing: float = 0.6
    retained_write_fraction: float = 0.04
    retention_days: float = 30.0
    outage_window_steps: int = 720
    daemon_crash_chance: float = 0.03
    node_reboot_chance: float = 0.01
    crash_min_steps: int = 2
    crash_max_steps: int = 12
    reboot_min_steps: int = 5
    reboot_max_steps: int = 20
    osd_out_steps: int = 10
    recovery_steps: int = 10

    def __post_init__(self) -> None:
        problems = []
        if self.node_count < REPLICAS:
            problems.append(f"node_count must be at least {REPLICAS} (one replica per host)")
        if self.osds_per_node < 1 or self.osd_bytes <= 0:
            problems.append("every node needs at least one OSD of positive size")
        if self.mon_count not in (1, 3, 5) or self.mon_count > self.node_count:
            problems.append("mon_count must be 1, 3 or 5 and at most node_count")
        if self.steps_per_day < 24:
            problems.append("steps_per_day must be at least 24")
        if not 0.0 <= self.daily_swing < 1.0:
            problems.append("daily_swing must be within [0, 1)")
        if not 0.0 <= self.initial_fill <= FULL_RATIO:
            problems.append(f"initial_fill must be within [0, {FULL_RATIO}]")
        for chance in ("daemon_crash_chance", "node_reboot_chance", "retained_write_fraction"):
            if not 0.0 <= getattr(self, chance) <= 1.0:
                problems.append(f"{chance} must be within [0, 1]")
        if not 1 <= self.crash_min_steps <= self.crash_max_steps < self.outage_window_steps:
            problems.append("need 1 <= crash_min_steps <= crash_max_steps < outage_window_steps")
        if not 1 <= self.reboot_min_steps <= self.reboot_max_steps < self.outage_window_steps:
            problems.append("need 1 <= reboot_min_steps <= reboot_max_steps < outage_window_steps")
        if self.retention_days <= 0:
            problems.append("retention_days must be positive")
        if problems:
            raise ValueError("invalid storage spec: " + "; ".join(problems))

    @property
    def osd_count(self) -> int:
        """OSDs in the cluster."""
        return self.node_count * self.osds_per_node

    @property
    def raw_capacity(self) -> int:
        """Raw bytes of every OSD together."""
        return self.osd_count * self.osd_bytes

    @property
    def fsid(self) -> str:
        """The cluster's Ceph fsid, a UUID fixed by the seed."""
        return str(uuid.UUID(bytes=digest("fsid", self.seed)[:16], version=4))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StorageSpec:
        """Rebuild a spec from :meth:`to_dict` output; unknown keys are ignored."""
        known = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as exc:
            raise ValueError(f"not a stored storage spec: {exc}") from exc


@dataclass(frozen=True)
class Daemon:
    """A Ceph daemon and the node (index) it runs on."""

    kind: str
    name: str
    node: int

    @property
    def id(self) -> str:
        """Ceph's daemon id, e.g. ``osd.3`` or ``mon.a``."""
        return f"{self.kind}.{self.name}"


@lru_cache(maxsize=64)
def daemons_of(spec: StorageSpec) -> tuple[Daemon, ...]:
    """Every Ceph daemon of the cluster with its placement."""
    n = spec.node_count
    placed = [Daemon("mon", chr(ord("a") + i), i % n) for i in range(spec.mon_count)]
    placed += [Daemon("mgr", name, i % n) for i, name in enumerate("ab")]
    placed += [Daemon("mds", f"myfs-{name}", (i + 1) % n) for i, name in enumerate("ab")]
    placed += [Daemon("osd", str(i), i // spec.osds_per_node) for i in range(spec.osd_count)]
    placed += [Daemon("rgw", f"my-store-{name}", (i + 2) % n) for i, name in enumerate("ab")]
    return tuple(placed)


def node_name(spec: StorageSpec, node: int) -> str:
    """The Kubernetes node name of node ``node`` (0-based)."""
    return f"{spec.name}-node-{node + 1}"
