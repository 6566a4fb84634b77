"""Resources: what ClusterInsts take from Cloudlets and AppInsts from ClusterInsts.

- A ClusterInst takes its flavor times its node count (``num_masters + num_nodes``) from its
  Cloudlet; that is also its own capacity for AppInsts. Each AppInst takes its flavor once.
- A Cloudlet's capacity is what its CloudletInfo reports (``os_max_ram``/``vcores``/``vol_gb``);
  the simulated resource manager reports :data:`SIMULATED_CLOUDLET` (64 GB RAM, 32 vCPUs, 1 TB
  disk) and the node flavors in :data:`NODE_FLAVORS`. A zero (or a missing CloudletInfo) means
  the simulated default. An admin may inject other values.
- ``CloudletRefs`` / ``ClusterRefs`` hold the sums, kept in step in the same transaction as the
  objects; the reservation lasts until the object is finally gone (after its delete completes).
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc

import app.services.edge.kinds as k
from app.services.edge.records import load, put
from app.services.status import Rejected
from app.store import Reader, Writer
from gen.edgeproto import (
    app_inst_pb2,
    cloudlet_pb2,
    clusterinst_pb2,
    flavor_pb2,
    refs_pb2,
)


@dataclass(frozen=True)
class Resources:
    """RAM in MB, vCPU cores and disk in GB."""

    ram: int = 0
    vcpus: int = 0
    disk: int = 0

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.ram + other.ram, self.vcpus + other.vcpus, self.disk + other.disk)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.ram - other.ram, self.vcpus - other.vcpus, self.disk - other.disk)

    def times(self, n: int) -> Resources:
        return Resources(self.ram * n, self.vcpus * n, self.disk * n)

    def over(self, limit: Resources) -> list[str]:
        """What exceeds ``limit``, in words (empty when everything fits)."""
        return [
            f"{name} {mine} > {theirs}"
            for name, mine, theirs in (
                ("RAM MB", self.ram, limit.ram),
                ("vCPUs", self.vcpus, limit.vcpus),
                ("disk GB", self.disk, limit.disk),
            )
            if mine > theirs
        ]


SIMULATED_CLOUDLET = Resources(ram=65536, vcpus=32, disk=1000)
NODE_FLAVORS = (
    cloudlet_pb2.FlavorInfo(name="sim.small", vcpus=2, ram=4096, disk=40),
    cloudlet_pb2.FlavorInfo(name="sim.medium", vcpus=4, ram=8192, disk=80),
    cloudlet_pb2.FlavorInfo(name="sim.large", vcpus=8, ram=16384, disk=160),
    cloudlet_pb2.FlavorInfo(name="sim.xlarge", vcpus=16, ram=32768, disk=320),
)


def of_flavor(flavor: flavor_pb2.Flavor) -> Resources:
    return Resources(flavor.ram, flavor.vcpus, flavor.disk)


def node_count(inst: clusterinst_pb2.ClusterInst) -> int:
    return inst.num_masters + inst.num_nodes


async def flavor_resources(reader: Reader, key: flavor_pb2.FlavorKey) -> Resources:
    flavor = await load(reader, k.FLAVOR, key)
    return Resources() if flavor is None else of_flavor(flavor)


async def cluster_inst_resources(reader: Reader, inst: clusterinst_pb2.ClusterInst) -> Resources:
    """What ``inst`` takes from its Cloudlet (and offers its AppInsts)."""
    return (await flavor_resources(reader, inst.flavor)).times(node_count(inst))


def cloudlet_capacity(info: cloudlet_pb2.CloudletInfo | None) -> Resources:
    """The cloudlet's capacity from its reported info (simulated defaults where unreported)."""
    if info is None:
        return SIMULATED_CLOUDLET
    return Resources(
        info.os_max_ram or SIMULATED_CLOUDLET.ram,
        info.os_max_vcores or SIMULATED_CLOUDLET.vcpus,
        info.os_max_vol_gb or SIMULATED_CLOUDLET.disk,
    )


def node_flavor_for(
    info: cloudlet_pb2.CloudletInfo | None, need: Resources
) -> cloudlet_pb2.FlavorInfo | None:
    """The smallest node flavor the cloudlet reports that fits ``need`` per node."""
    flavors = list(info.flavors) if info is not None and info.flavors else list(NODE_FLAVORS)
    fitting = [
        f for f in flavors if f.ram >= need.ram and f.vcpus >= need.vcpus and f.disk >= need.disk
    ]
    return min(fitting, key=lambda f: (f.vcpus, f.ram, f.disk), default=None)


def _used(refs: refs_pb2.CloudletRefs | refs_pb2.ClusterRefs) -> Resources:
    return Resources(refs.used_ram, refs.used_vcores, refs.used_disk)


def _set_used(refs: refs_pb2.CloudletRefs | refs_pb2.ClusterRefs, used: Resources) -> None:
    refs.used_ram, refs.used_vcores, refs.used_disk = used.ram, used.vcpus, used.disk


async def cloudlet_refs(reader: Reader, key: cloudlet_pb2.CloudletKey) -> refs_pb2.CloudletRefs:
    refs = await load(reader, k.CLOUDLET_REFS, key)
    return refs if refs is not None else refs_pb2.CloudletRefs(key=key)


async def cluster_refs(reader: Reader, key: clusterinst_pb2.ClusterInstKey) -> refs_pb2.ClusterRefs:
    refs = await load(reader, k.CLUSTER_REFS, key)
    return refs if refs is not None else refs_pb2.ClusterRefs(key=key)


async def reserve_on_cloudlet(
    tx: Writer, inst: clusterinst_pb2.ClusterInst, change: Resources, *, adding: bool
) -> None:
    """Account ``change`` on the ClusterInst's Cloudlet; RESOURCE_EXHAUSTED if it does not fit."""
    key = inst.key.cloudlet_key
    refs = await cloudlet_refs(tx, key)
    used = _used(refs) + change
    capacity = cloudlet_capacity(await load(tx, k.CLOUDLET_INFO, key))
    excess = used.over(capacity)
    if excess:
        raise Rejected(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"not enough resources on Cloudlet {k.key_string(key)} for ClusterInst "
            f"{k.key_string(inst.key)}: {', '.join(excess)} (used + requested > capacity)",
        )
    _set_used(refs, used)
    if adding:
        refs.clusters.append(inst.key.cluster_key)
    await put(tx, k.CLOUDLET_REFS, refs)


async def release_on_cloudlet(
    tx: Writer, inst: clusterinst_pb2.ClusterInst, taken: Resources
) -> None:
    """Give back what ``inst`` took from its Cloudlet."""
    refs = await cloudlet_refs(tx, inst.key.cloudlet_key)
    _set_used(refs, _clamped(_used(refs) - taken))
    remaining = list(refs.clusters)
    if inst.key.cluster_key in remaining:
        remaining.remove(inst.key.cluster_key)
    del refs.clusters[:]
    refs.clusters.extend(remaining)
    await put(tx, k.CLOUDLET_REFS, refs)


async def reserve_on_cluster(
    tx: Writer, inst: app_inst_pb2.AppInst, change: Resources, *, adding: bool
) -> None:
    """Account ``change`` on the AppInst's ClusterInst; RESOURCE_EXHAUSTED if it does not fit."""
    key = inst.key.cluster_inst_key
    refs = await cluster_refs(tx, key)
    used = _used(refs) + change
    cluster = await load(tx, k.CLUSTER_INST, key)
    capacity = Resources() if cluster is None else await cluster_inst_resources(tx, cluster)
    excess = used.over(capacity)
    if excess:
        raise Rejected(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"not enough resources on ClusterInst {k.key_string(key)} for AppInst "
            f"{k.key_string(inst.key)}: {', '.join(excess)} (used + requested > capacity)",
        )
    _set_used(refs, used)
    if adding:
        refs.apps.append(inst.key.app_key)
    await put(tx, k.CLUSTER_REFS, refs)


async def release_on_cluster(tx: Writer, inst: app_inst_pb2.AppInst, taken: Resources) -> None:
    """Give back what ``inst`` took from its ClusterInst."""
    refs = await load(tx, k.CLUSTER_REFS, inst.key.cluster_inst_key)
    if refs is None:
        return
    _set_used(refs, _clamped(_used(refs) - taken))
    remaining = list(refs.apps)
    if inst.key.app_key in remaining:
        remaining.remove(inst.key.app_key)
    del refs.apps[:]
    refs.apps.extend(remaining)
    await put(tx, k.CLUSTER_REFS, refs)


def _clamped(value: Resources) -> Resources:
    return Resources(max(0, value.ram), max(0, value.vcpus), max(0, value.disk))


async def check_cluster_fits_apps(
    reader: Reader, inst: clusterinst_pb2.ClusterInst, offered: Resources
) -> None:
    """FAILED_PRECONDITION if a resized ClusterInst would offer less than its AppInsts use."""
    refs = await cluster_refs(reader, inst.key)
    excess = _used(refs).over(offered)
    if excess:
        raise Rejected(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"ClusterInst {k.key_string(inst.key)} would be smaller than its AppInsts use: "
            f"{', '.join(excess)}",
        )
