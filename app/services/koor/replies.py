"""The stats API's replies, built from an observed :class:`~app.sim.storage.StorageSnapshot`.

The simulation (:mod:`app.sim.storage`) knows Ceph, not this API: these functions put its numbers
in ``stats_pb2`` messages. The radar (every value in [0, 100])::

    cluster_health     = 100 * daemons up / daemons         (mon + mgr + mds + osd + rgw)
    nodes_health       = 100 * nodes ready / nodes
    capacity_available = 100 * available / total            (raw bytes)
    stability          = 100 * daemon-steps up / daemon-steps over the last simulated day
                                                            (since creation if younger)
    reliability        = 100 * active+clean PGs / PGs

Strings follow Ceph's and kubectl's style: sizes in IEC units (``4.2 TiB``), client I/O as
``41.2 MiB/s`` and ``1234 op/s``. Versions, image URIs and hashes are simulated values. The
first mgr that is up is the active one (a real cluster would not fail back to ``a``), and
``ClusterStats.test``, which has no documented meaning, is left empty.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

from google.protobuf.timestamp_pb2 import Timestamp

from app.sim.clock import Clock
from app.sim.storage import StorageSnapshot, meets_minimum_resources, observe
from app.sim.storage_spec import (
    OBJECT_SIZE,
    POOLS,
    READ_OP_SIZE,
    REPLICAS,
    ROOK_NAMESPACE,
    VOLUME_SIZE,
    WRITE_OP_SIZE,
    GiB,
    KiB,
    MiB,
    StorageSpec,
    TiB,
    node_name,
)
from gen.resources.stats import stats_pb2


def format_bytes(n: float) -> str:
    """IEC units with one decimal, as Ceph prints them (``4.2 TiB``, ``0 B``)."""
    for unit, size in (("PiB", 1024**5), ("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _timestamp(clock: Clock, step: int) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(clock.time_of(step))
    return stamp


def cluster_stats(s: StorageSnapshot, clock: Clock) -> stats_pb2.ClusterStats:
    """``ceph status`` in the API's shape; timestamps are the wall times of their steps."""
    mgr_up = s.up("mgr")
    mds_up = s.up("mds")
    rgw_up = s.up("rgw")
    osds_up = s.up("osd")
    services = stats_pb2.Services(
        mon=stats_pb2.MonService(
            daemon_count=s.count("mon"),
            quorum=",".join(s.mon_quorum),
            created_at=_timestamp(clock, s.spec.created_step),
            updated_at=_timestamp(clock, s.mon_updated_step),
        ),
        mgr=stats_pb2.MgrService(
            # The first mgr up is active, so the simulation fails back to mgr.a when it returns.
            active=mgr_up[0].name if mgr_up else "",
            standbys=[d.name for d in mgr_up[1:]],
            updated_at=_timestamp(clock, s.mgr_updated_step),
        ),
        mds=stats_pb2.MdsService(daemons_up=len(mds_up), hot_standby_count=max(0, len(mds_up) - 1)),
        osd=stats_pb2.OsdService(
            osd_count=s.count("osd"),
            osd_up=len(osds_up),
            osd_in=sum(s.osds_in),
            osd_up_updated_at=_timestamp(clock, s.osd_up_updated_step),
            osd_in_updated_at=_timestamp(clock, s.osd_in_updated_step),
        ),
        rgw=stats_pb2.RgwService(
            active_daemon=len(rgw_up), host_count=len({d.node for d in rgw_up}), zone_count=1
        ),
    )
    data = stats_pb2.Data(
        volumes=6 + s.stored_bytes // VOLUME_SIZE,
        pools=stats_pb2.Pools(
            pools=len(POOLS), pgs=stats_pb2.PGs(active_clean=s.pg_states["active+clean"])
        ),
        objects=stats_pb2.Objects(
            object_count=s.stored_bytes // OBJECT_SIZE, size=format_bytes(s.stored_bytes)
        ),
        usage=stats_pb2.Usage(used=s.raw_used, available=s.raw_available, total=s.raw_total),
    )
    crashes = [
        stats_pb2.Crash(
            description=(
                f"{clock.time_of(c.step).strftime('%Y-%m-%dT%H:%M:%SZ')} {c.daemon} "
                f"on {c.node}: {c.cause}"
            )
        )
        for c in s.crashes
    ]
    iops = stats_pb2.IOPS(
        client_read=f"{format_bytes(s.client_read)}/s",
        client_write=f"{format_bytes(s.client_write)}/s",
        client_read_ops=f"{round(s.client_read / READ_OP_SIZE)} op/s",
        client_write_ops=f"{round(s.client_write / WRITE_OP_SIZE)} op/s",
    )
    return stats_pb2.ClusterStats(
        id=s.spec.fsid, status=s.status, crashes=crashes, services=services, data=data, iops=iops
    )


def cluster_nodes(s: StorageSnapshot, clock: Clock) -> list[stats_pb2.NodeInfo]:
    """The Kubernetes nodes; ``roles`` lists the Ceph daemons placed on each."""
    nodes = []
    for i, up in enumerate(s.nodes_up):
        roles = sorted({d.kind for d in s.daemons if d.node == i})
        nodes.append(
            stats_pb2.NodeInfo(
                name=node_name(s.spec, i),
                status=stats_pb2.RESOURCE_READY if up else stats_pb2.RESOURCE_NOT_READY,
                roles=roles,
                internal_ip=f"10.30.0.{11 + i}",
                # TEST-NET-1: a documentation range, plainly not a real address.
                external_ip=f"192.0.2.{11 + i}",
                age=_timestamp(clock, s.spec.created_step),
            )
        )
    return nodes


def cluster_resources(s: StorageSnapshot) -> stats_pb2.ClusterResources:
    """Allocatable resources summed over every node (``nodes`` counts the nodes listed)."""
    spec = s.spec
    return stats_pb2.ClusterResources(
        nodes=str(spec.node_count),
        storage=format_bytes(spec.node_count * spec.node_ephemeral_bytes),
        cpu=str(spec.node_count * spec.node_cpu),
        memory=format_bytes(spec.node_count * spec.node_memory_bytes),
    )


def _detailed(version: str, image: str, chart: str) -> stats_pb2.DetailedVersion:
    # The original's rules: image_uri and helm_repository are URIs (a scheme, then the rest:
    # ``docker://`` as container tools write an image reference), version is a semver.
    reference = f"{image}:v{version}"
    return stats_pb2.DetailedVersion(
        version=version,
        image_uri=f"docker://{reference}",
        image_hash="sha256:" + hashlib.sha256(f"simulated {reference}".encode()).hexdigest(),
        helm_repository="https://charts.koor.tech/release",
        helm_chart=chart,
    )


CURRENT_VERSIONS = {"koor_operator": "0.3.8", "ksd": "1.12.4", "ceph": "18.2.2"}
LATEST_VERSIONS = {"koor_operator": "0.4.0", "ksd": "1.13.1", "ceph": "18.2.4"}


def koor_cluster(s: StorageSnapshot) -> stats_pb2.KoorCluster:
    """The KoorCluster resource: its spec and the operator's status (simulated versions)."""
    spec = s.spec
    return stats_pb2.KoorCluster(
        name=spec.name,
        namespace=spec.namespace,
        spec=stats_pb2.KoorClusterSpec(
            use_all_devices=True,
            monitoring_enabled=True,
            dashboard_enabled=True,
            toolbox_enabled=True,
            upgrade_options=stats_pb2.UpgradeOptions(
                mode=stats_pb2.UPGRADE_MODE_NOTIFY,
                endpoint="https://versions.koor.tech",
                schedule="0 0 * * *",
            ),
            ksd_release_name="ksd",
            ksd_cluster_release_name="ksd-cluster",
        ),
        status=stats_pb2.KoorClusterStatus(
            total_resources=cluster_resources(s),
            meets_minimum_resources=meets_minimum_resources(spec),
            current_versions=stats_pb2.ProductVersions(kube=spec.kube_version, **CURRENT_VERSIONS),
            latest_versions=stats_pb2.DetailedProductVersions(
                koor_operator=_detailed(
                    LATEST_VERSIONS["koor_operator"],
                    "docker.io/koorinc/koor-operator",
                    "koor-operator",
                ),
                ksd=_detailed(LATEST_VERSIONS["ksd"], "docker.io/koorinc/ceph", "rook-ceph"),
                ceph=_detailed(LATEST_VERSIONS["ceph"], "quay.io/ceph/ceph", "rook-ceph-cluster"),
            ),
        ),
    )


def _reliability(up: int, needed: int, total: int) -> stats_pb2.ReliabilityScore:
    """OK with every replica up, DEGRADED while still serving, NONE below ``needed``."""
    if up >= total:
        return stats_pb2.RELIABILITY_OK
    return stats_pb2.RELIABILITY_DEGRADED if up >= needed else stats_pb2.RELIABILITY_NONE


# What each daemon kind needs to keep serving: a mon majority, one mgr, mds and rgw, and OSDs
# enough that no PG is inactive (judged from the PG states instead).
_SERVICE_MINIMUM = {"mgr": 1, "mds": 1, "rgw": 1}


def resource_inventory(
    s: StorageSnapshot,
) -> tuple[list[stats_pb2.ResourceInfo], list[stats_pb2.ResourceInfo]]:
    """(custom resources, deployments) as ``GetClusterResources`` lists them."""
    ready, not_ready = stats_pb2.RESOURCE_READY, stats_pb2.RESOURCE_NOT_READY
    pgs = s.pg_states
    pg_reliability = (
        stats_pb2.RELIABILITY_NONE
        if pgs["undersized+degraded+peered"]
        else stats_pb2.RELIABILITY_OK
        if pgs["active+clean"] == s.pg_total
        else stats_pb2.RELIABILITY_DEGRADED
    )
    service_reliability = {
        "mon": _reliability(len(s.up("mon")), s.count("mon") // 2 + 1, s.count("mon")),
        "osd": pg_reliability,
        **{k: _reliability(len(s.up(k)), n, s.count(k)) for k, n in _SERVICE_MINIMUM.items()},
    }
    cluster_reliability = {
        "HEALTH_OK": stats_pb2.RELIABILITY_OK,
        "HEALTH_WARN": stats_pb2.RELIABILITY_DEGRADED,
    }.get(s.status, stats_pb2.RELIABILITY_NONE)

    def custom(
        kind: str,
        name: str,
        namespace: str,
        serving: bool,
        replicas: int,
        score: stats_pb2.ReliabilityScore,
    ) -> stats_pb2.ResourceInfo:
        return stats_pb2.ResourceInfo(
            apiversion="storage.koor.tech/v1alpha1" if kind == "KoorCluster" else "ceph.rook.io/v1",
            kind=kind,
            namespace=namespace,
            name=name,
            status=ready if serving else not_ready,
            replicas=replicas,
            reliability=score,
        )

    spec = s.spec
    resources = [
        custom("KoorCluster", spec.name, spec.namespace, True, 0, cluster_reliability),
        custom(
            "CephCluster",
            ROOK_NAMESPACE,
            ROOK_NAMESPACE,
            s.status != "HEALTH_ERR",
            0,
            cluster_reliability,
        ),
        custom(
            "CephBlockPool",
            "replicapool",
            ROOK_NAMESPACE,
            not pgs["undersized+degraded+peered"],
            REPLICAS,
            pg_reliability,
        ),
        custom(
            "CephFilesystem",
            "myfs",
            ROOK_NAMESPACE,
            bool(s.up("mds")),
            REPLICAS,
            service_reliability["mds"],
        ),
        custom(
            "CephObjectStore",
            "my-store",
            ROOK_NAMESPACE,
            bool(s.up("rgw")),
            REPLICAS,
            service_reliability["rgw"],
        ),
    ]

    def deployment(
        name: str, namespace: str, up: bool, score: stats_pb2.ReliabilityScore
    ) -> stats_pb2.ResourceInfo:
        return stats_pb2.ResourceInfo(
            apiversion="apps/v1",
            kind="Deployment",
            namespace=namespace,
            name=name,
            status=ready if up else not_ready,
            replicas=1 if up else 0,  # ready replicas, out of one
            reliability=score,
        )

    deployments = [
        deployment("koor-operator", spec.namespace, True, stats_pb2.RELIABILITY_OK),
        deployment("rook-ceph-operator", ROOK_NAMESPACE, True, stats_pb2.RELIABILITY_OK),
    ]
    for d, up in zip(s.daemons, s.daemons_up, strict=True):
        deployments.append(
            deployment(
                f"rook-ceph-{d.kind}-{d.name}", ROOK_NAMESPACE, up, service_reliability[d.kind]
            )
        )
    return resources, deployments


def cluster_radar(s: StorageSnapshot) -> stats_pb2.ClusterRadar:
    """The five radar axes, each in [0, 100], by the formula in the module docstring."""
    return stats_pb2.ClusterRadar(
        cluster_health=100 * sum(s.daemons_up) / len(s.daemons),
        nodes_health=100 * sum(s.nodes_up) / len(s.nodes_up),
        capacity_available=100 * s.raw_available / s.raw_total,
        stability=100 * s.uptime_ratio,
        reliability=100 * s.pg_states["active+clean"] / s.pg_total,
    )


class StorageProvider(Protocol):
    """What the StatsService needs from a storage cluster, at the clock's current step."""

    def cluster_stats(self) -> stats_pb2.ClusterStats: ...

    def cluster_nodes(self) -> list[stats_pb2.NodeInfo]: ...

    def resource_inventory(
        self,
    ) -> tuple[list[stats_pb2.ResourceInfo], list[stats_pb2.ResourceInfo]]: ...

    def cluster_radar(self) -> stats_pb2.ClusterRadar: ...

    def koor_cluster(self) -> stats_pb2.KoorCluster: ...


@dataclass(frozen=True)
class SimulatedStorageCluster:
    """The embedded :class:`StorageProvider`: one spec observed on one clock."""

    spec: StorageSpec
    clock: Clock

    def snapshot(self) -> StorageSnapshot:
        """The cluster at the clock's current step."""
        return observe(self.spec, self.clock.now())

    def cluster_stats(self) -> stats_pb2.ClusterStats:
        """``GetClusterStats``."""
        return cluster_stats(self.snapshot(), self.clock)

    def cluster_nodes(self) -> list[stats_pb2.NodeInfo]:
        """``GetClusterNodes``."""
        return cluster_nodes(self.snapshot(), self.clock)

    def resource_inventory(
        self,
    ) -> tuple[list[stats_pb2.ResourceInfo], list[stats_pb2.ResourceInfo]]:
        """``GetClusterResources``: (resources, deployments)."""
        return resource_inventory(self.snapshot())

    def cluster_radar(self) -> stats_pb2.ClusterRadar:
        """``GetClusterRadar``."""
        return cluster_radar(self.snapshot())

    def koor_cluster(self) -> stats_pb2.KoorCluster:
        """``GetKoorCluster``."""
        return koor_cluster(self.snapshot())
