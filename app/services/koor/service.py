"""``stats.StatsService``: the statistics of one simulated Ceph cluster run by Koor.

Every answer comes from :class:`app.services.koor.replies.SimulatedStorageCluster` at the
clock's current step. Its :class:`~app.sim.storage_spec.StorageSpec` is stored once, as a Struct
under kind ``koor.storage_spec``, key ``koor-cluster``: created on first use (or by the demo)
with the ``sim_seed`` setting as its seed and the current step as its creation step, and read
back after a restart, so the cluster continues exactly where it was. The spec never changes
afterwards.

The model (outages, placement groups, usage, I/O, health) is documented in
:mod:`app.sim.storage`, the radar formula in :mod:`app.services.koor.replies`; the radar's
axes, each in [0, 100], are::

    cluster_health     = 100 * daemons up / daemons         (mon + mgr + mds + osd + rgw)
    nodes_health       = 100 * nodes ready / nodes
    capacity_available = 100 * available / total            (raw bytes)
    stability          = 100 * daemon-steps up / daemon-steps over the last simulated day
    reliability        = 100 * active+clean PGs / PGs

Every call observes the cluster at one step, so the numbers of one answer are consistent with
each other (``used + available = total``, ``osd_up <= osd_count``, nodes counted = nodes listed).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import grpc
from google.protobuf import struct_pb2

from app.services.koor.replies import SimulatedStorageCluster
from app.services.plain_data import from_struct, to_struct
from app.services.status import abort_store_error
from app.sim.clock import Clock
from app.sim.storage_spec import StorageSpec
from app.store import AlreadyExists, ObjectStore, StoreError
from gen.stats import stats_pb2, stats_pb2_grpc

STORAGE_SPEC = "koor.storage_spec"
STORAGE_CLUSTER_KEY = "koor-cluster"


async def ensure_storage_spec(store: ObjectStore, clock: Clock, seed: int) -> StorageSpec:
    """The stored spec, created now with ``seed`` if there is none yet."""
    record = await store.get(STORAGE_SPEC, STORAGE_CLUSTER_KEY)
    if record is None:
        spec = replace(StorageSpec(), seed=seed, created_step=clock.now())
        try:
            await store.create(STORAGE_SPEC, STORAGE_CLUSTER_KEY, to_struct(spec.to_dict()))
            return spec
        except AlreadyExists:  # another replica created it first: theirs is the one
            record = await store.get(STORAGE_SPEC, STORAGE_CLUSTER_KEY)
            assert record is not None
    return StorageSpec.from_dict(from_struct(StorageSpec, record.parse(struct_pb2.Struct)))


class StatsService(stats_pb2_grpc.StatsServiceServicer):
    """The five read-only statistics RPCs."""

    def __init__(self, store: ObjectStore, clock: Clock, *, seed: int) -> None:
        self.store = store
        self.clock = clock
        self.seed = seed
        # The spec never changes once stored, so keeping it after the first read is safe.
        self._cluster: SimulatedStorageCluster | None = None
        self._lock = asyncio.Lock()

    async def storage_cluster(self) -> SimulatedStorageCluster:
        """The simulated cluster, its spec read from (or created in) the store once."""
        async with self._lock:
            if self._cluster is None:
                spec = await ensure_storage_spec(self.store, self.clock, self.seed)
                self._cluster = SimulatedStorageCluster(spec, self.clock)
            return self._cluster

    async def _provider(self, context: grpc.aio.ServicerContext) -> SimulatedStorageCluster:
        try:
            return await self.storage_cluster()
        except StoreError as error:
            await abort_store_error(context, error)

    async def GetClusterStats(
        self, request: stats_pb2.GetClusterStatsRequest, context: grpc.aio.ServicerContext
    ) -> stats_pb2.GetClusterStatsResponse:
        cluster = await self._provider(context)
        return stats_pb2.GetClusterStatsResponse(stats=cluster.cluster_stats())

    async def GetClusterResources(
        self, request: stats_pb2.GetClusterResourcesRequest, context: grpc.aio.ServicerContext
    ) -> stats_pb2.GetClusterResourcesResponse:
        cluster = await self._provider(context)
        resources, deployments = cluster.resource_inventory()
        return stats_pb2.GetClusterResourcesResponse(resources=resources, deployments=deployments)

    async def GetClusterNodes(
        self, request: stats_pb2.GetClusterNodesRequest, context: grpc.aio.ServicerContext
    ) -> stats_pb2.GetClusterNodesResponse:
        cluster = await self._provider(context)
        return stats_pb2.GetClusterNodesResponse(nodes=cluster.cluster_nodes())

    async def GetClusterRadar(
        self, request: stats_pb2.GetClusterRadarRequest, context: grpc.aio.ServicerContext
    ) -> stats_pb2.GetClusterRadarResponse:
        cluster = await self._provider(context)
        return stats_pb2.GetClusterRadarResponse(radar=cluster.cluster_radar())

    async def GetKoorCluster(
        self, request: stats_pb2.GetKoorClusterRequest, context: grpc.aio.ServicerContext
    ) -> stats_pb2.GetKoorClusterResponse:
        cluster = await self._provider(context)
        return stats_pb2.GetKoorClusterResponse(koor_cluster=cluster.koor_cluster())
