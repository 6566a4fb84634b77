"""What differs per edge type on Create and Update: defaults, reservations, derived fields.

Each hook runs inside the Create/Update transaction, after the references were checked and
before the object is written; refusing (Rejected) rolls everything back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from google.protobuf.message import Message

import app.services.edge.kinds as k
from app.services.edge import capacity, network, references
from app.services.edge.progress import DELETE, current
from app.services.edge.records import load, load_all, put
from app.services.names import dns_name
from app.services.status import Rejected, Violations
from app.sim.clock import Clock
from app.store import Transaction, Writer
from gen.distributed_match_engine import loc_pb2
from gen.edgeproto import app_inst_pb2, clusterinst_pb2, common_pb2, refs_pb2

Code = grpc.StatusCode
URI_DOMAIN = "edge.portico.test"
Hook = Callable[[Transaction, Any, Any], Awaitable[None]]


class TypeHooks:
    """The per-type steps of Create (``old`` is None) and Update."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.before_create: dict[str, Hook] = {
            k.CLOUDLET.name: self._cloudlet_created,
            k.CLUSTER_INST.name: self._cluster_inst_created,
            k.APP_INST.name: self._app_inst_created,
        }
        self.before_update: dict[str, Hook] = {
            k.FLAVOR.name: self._flavor_updated,
            k.CLOUDLET.name: self._cloudlet_updated,
            k.CLUSTER_INST.name: self._cluster_inst_updated,
            k.APP_INST.name: self._app_inst_updated,
        }

    async def _require_not_deleting(self, tx: Writer, kind: k.EdgeType, key: Message) -> None:
        parent = kind.message(key=key)
        running = await current(tx, kind, parent)
        if running is not None and running.action == DELETE:
            raise Rejected(
                Code.FAILED_PRECONDITION,
                f"{kind.describe(parent)} is being deleted "
                f"({common_pb2.TrackedState.Name(running.state)})",
            )

    async def _cloudlet_created(self, tx: Transaction, old: None, obj: Any) -> None:
        if await load(tx, k.CLOUDLET_REFS, obj.key) is None:  # a retry keeps what is reserved
            await put(tx, k.CLOUDLET_REFS, refs_pb2.CloudletRefs(key=obj.key))

    async def _cloudlet_updated(self, tx: Transaction, old: Any, new: Any) -> None:
        """Keep addresses in use, and move the AppInsts' ``cloudlet_loc`` with the Cloudlet."""
        refs = await capacity.cloudlet_refs(tx, new.key)
        problem = network.address_shortfall(new, refs)
        if problem is not None:
            raise Rejected(Code.FAILED_PRECONDITION, f"{k.CLOUDLET.describe(new)}: {problem}")
        if old.location == new.location:
            return
        for inst in await load_all(tx, k.APP_INST):
            if inst.key.cluster_inst_key.cloudlet_key == new.key:
                inst.cloudlet_loc.CopyFrom(new.location)
                await put(tx, k.APP_INST, inst)

    async def _cluster_inst_created(
        self, tx: Transaction, old: None, obj: clusterinst_pb2.ClusterInst
    ) -> None:
        if k.is_empty(obj.flavor):
            raise Rejected.invalid(_required("flavor", "the Cluster has no default flavor"))
        await self._require_not_deleting(tx, k.CLOUDLET, obj.key.cloudlet_key)
        if not obj.auto:
            obj.liveness = common_pb2.LIVENESS_STATIC
        await self._place_cluster_inst(tx, obj)
        taken = await capacity.cluster_inst_resources(tx, obj)
        await capacity.reserve_on_cloudlet(tx, obj, taken, adding=True)
        await network.allocate_ip(tx, obj)
        await put(tx, k.CLUSTER_REFS, refs_pb2.ClusterRefs(key=obj.key))

    async def _place_cluster_inst(self, tx: Transaction, obj: clusterinst_pb2.ClusterInst) -> None:
        """Pick the cloudlet node flavor that fits the ClusterInst's flavor."""
        need = await capacity.flavor_resources(tx, obj.flavor)
        info = await load(tx, k.CLOUDLET_INFO, obj.key.cloudlet_key)
        node = capacity.node_flavor_for(info, need)
        if node is None:
            raise Rejected(
                Code.RESOURCE_EXHAUSTED,
                f"no node flavor of Cloudlet {k.key_string(obj.key.cloudlet_key)} fits flavor "
                f"{obj.flavor.name!r} ({need.ram} MB RAM, {need.vcpus} vCPUs, {need.disk} GB)",
            )
        obj.node_flavor = node.name

    async def _cluster_inst_updated(
        self, tx: Transaction, old: clusterinst_pb2.ClusterInst, new: clusterinst_pb2.ClusterInst
    ) -> None:
        before = await capacity.cluster_inst_resources(tx, old)
        after = await capacity.cluster_inst_resources(tx, new)
        if before == after:
            return
        await self._place_cluster_inst(tx, new)
        await capacity.check_cluster_fits_apps(tx, new, after)
        await capacity.reserve_on_cloudlet(tx, new, after - before, adding=False)

    async def _app_inst_created(
        self, tx: Transaction, old: None, obj: app_inst_pb2.AppInst
    ) -> None:
        if k.is_empty(obj.flavor):
            raise Rejected.invalid(_required("flavor", "the App has no default flavor"))
        key = obj.key
        await self._require_not_deleting(tx, k.CLUSTER_INST, key.cluster_inst_key)
        app = await load(tx, k.APP, key.app_key)
        cluster = await load(tx, k.CLUSTER_INST, key.cluster_inst_key)
        if app is None or cluster is None:  # check_references found them in this transaction
            raise RuntimeError(f"the App or ClusterInst of {k.APP_INST.describe(obj)} vanished")
        cloudlet = await load(tx, k.CLOUDLET, key.cluster_inst_key.cloudlet_key)
        obj.liveness = common_pb2.LIVENESS_STATIC
        cloudlet_key = key.cluster_inst_key.cloudlet_key
        # Shared access: the cloudlet's root LB; dedicated: the ClusterInst's own.
        names = [cloudlet_key.name, cloudlet_key.operator_key.name]
        if cluster.ip_access == network.IA.IP_ACCESS_DEDICATED:
            names.insert(0, key.cluster_inst_key.cluster_key.name)
        obj.uri = ".".join([*(dns_name(part) for part in names), URI_DOMAIN])
        await network.allocate_ports(tx, obj, app, cluster)
        if cloudlet is not None and cloudlet.HasField("location"):
            obj.cloudlet_loc.CopyFrom(cloudlet.location)
        else:
            obj.cloudlet_loc.CopyFrom(loc_pb2.Loc())
        at = self.clock.time_of(self.clock.now())
        obj.created_at.seconds = int(at.timestamp())
        taken = await capacity.flavor_resources(tx, obj.flavor)
        await capacity.reserve_on_cluster(tx, obj, taken, adding=True)

    async def _app_inst_updated(
        self, tx: Transaction, old: app_inst_pb2.AppInst, new: app_inst_pb2.AppInst
    ) -> None:
        before = await capacity.flavor_resources(tx, old.flavor)
        after = await capacity.flavor_resources(tx, new.flavor)
        if before != after:
            await capacity.reserve_on_cluster(tx, new, after - before, adding=False)

    async def _flavor_updated(self, tx: Transaction, old: Any, new: Any) -> None:
        if capacity.of_flavor(old) == capacity.of_flavor(new):
            return
        user = await references.referrer(
            tx, k.FLAVOR, new.key, sources=(k.CLUSTER_INST, k.APP_INST)
        )
        if user is not None:
            raise Rejected(
                Code.FAILED_PRECONDITION,
                f"cannot resize {k.FLAVOR.describe(new)}: it is in use by {user}",
            )


def _required(path: str, why: str) -> Violations:
    found = Violations()
    found.add(path, f"is required ({why})")
    return found
