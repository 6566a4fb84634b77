"""``cnct.kaas.api.Cluster``: Kubernetes clusters on (simulated) MaaS machines.

The servicer validates, checks the stored state and writes the desired state (spec) and status
in one transaction; the :mod:`reconciler <app.services.kaas.reconciler>` does the slow work.
Behaviour where the API's document is silent (the choices made here):

- Every request is validated first (INVALID_ARGUMENT naming each field), then the cluster is
  looked up (NOT_FOUND), then its state is checked (FAILED_PRECONDITION naming the state).
- ``control-plane`` is the control plane's pool name; a worker pool may not use it
  (INVALID_ARGUMENT). The control plane's size cannot be changed after creation.
- A create, pool addition or scale-up that would need more machine addresses than the IP pool
  has left (counting every cluster's wanted and still-held machines) is RESOURCE_EXHAUSTED.
- ``CreateClusterReply.ok`` and the other ``ok`` flags are true whenever the request was
  accepted; errors are statuses. ``DeleteClusterReply.status`` is the cluster's status name
  (``STOPPING``).
- ``k8s_version`` and ``UpgradeCluster.version`` may carry the ``v`` prefix Kubernetes writes
  (``v1.31.2``); the cluster stores the plain form. An unknown version is INVALID_ARGUMENT listing
  the versions on offer.
- Changes are queued, not serialised by the caller: pool changes (add, delete, scale) are accepted
  in every state but ``STOPPING`` and written into the desired state (the spec); the reconciler
  converges to the latest spec, whatever it was doing. The cluster shows ``RECONCILING`` (a new
  cluster stays ``PROVISIONING``). Only true conflicts are refused (FAILED_PRECONDITION naming
  the state): any change to a ``STOPPING`` cluster, and an upgrade while the cluster is
  ``PROVISIONING`` (no version runs yet), ``ERROR`` (repair it first) or already upgrading
  (finish one version-skew step before the next).
- Repair: ``ScaleNodePool`` deploys the failed machines of the pools it names again (also at an
  unchanged count), with a fresh retry budget; ``control-plane`` may be named too, at its own
  size only (FAILED_PRECONDITION otherwise: the control plane's size is fixed), to repair a
  control plane whose automatic retries gave up. Deleting a pool releases its machines, and a
  pool added again under its old name gets new deployments with a fresh budget (its slots keep
  their deployment count, so the simulation draws each one's next fault; a failed machine not
  yet released is deployed again as a scale would).
- ``ScaleNodePool`` to the current counts with no failed machine changes nothing.
- ``UpgradeCluster``: a version that is not one of ``GetUpgradeClusterInformation``'s is
  INVALID_ARGUMENT on ``version``, listing the choices.
- ``GetUpgradeClusterInformation`` answers what ``UpgradeCluster`` would do now: ``ok`` with the
  versions it would accept, or ``ok`` false with no versions when the state refuses an upgrade
  or the cluster runs the newest version.
- ``GetClusterNodesStatus`` lists every machine the cluster holds, including ones being
  released after a scale-down, control plane first.
- Pool labels and ``instanceType`` are validated and stored in the spec, and machines are
  deployed with the pool's type, but no reply of this API has a field for either:
  ``MachineStatus`` carries MaaS and Kubernetes status only, and the field set is the original's
  (wire compatibility), so they are not shown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import replace

import grpc

from app.services import revisions
from app.services.checked import checks_own_fields
from app.services.kaas import validation
from app.services.kaas.build import running_build
from app.services.kaas.changes import plain_version, require_changeable, upgrade_refusal
from app.services.kaas.records import (
    CLUSTER,
    CLUSTER_SPEC,
    CONTROL_PLANE_POOL,
    MACHINE,
    ClusterState,
    cluster_item,
    cluster_records,
    cluster_state,
    key_of,
    machine_count,
    machine_data,
    machine_status,
    parse_machines,
    pool_names,
    reserve_machines,
    reserved_machines,
    sorted_machines,
)
from app.services.kaas.versions import upgrade_targets
from app.services.status import (
    Rejected,
    Violation,
    Violations,
    abort,
    abort_invalid,
    abort_rejected,
    abort_store_error,
)
from app.sim.machine_model import Machine
from app.sim.machines import MachineProvider
from app.store import AlreadyExists, ObjectStore, Record, StoreError, Transaction
from gen.cnct.kaas.api import api_pb2, api_pb2_grpc

Code = grpc.StatusCode


def _state_name(status: int) -> str:
    return api_pb2.ClusterStatus.Name(status)


async def _existing(tx: Transaction, name: str) -> ClusterState:
    """The cluster a write names, at the revision the call's ``if-match`` asks for."""
    found = await cluster_records(tx, name)
    if found is None:
        raise Rejected(Code.NOT_FOUND, f"cluster {name!r} not found")
    revisions.check_if_match(found[0].revision, f"cluster {name!r}")  # the status record's
    return await cluster_state(*found)


class ClusterService(api_pb2_grpc.ClusterServicer):
    """The cluster manager's 11 RPCs over the object store."""

    def __init__(
        self,
        store: ObjectStore,
        provider: MachineProvider,
        *,
        versions: Sequence[str],
        machine_capacity: int,
    ) -> None:
        self.store = store
        self.provider = provider
        self.versions = tuple(versions)
        self.machine_capacity = machine_capacity
        self._version: api_pb2.GetVersionReply | None = None

    # -- reads -----------------------------------------------------------------------------

    async def GetCluster(
        self, request: api_pb2.GetClusterMsg, context: grpc.aio.ServicerContext
    ) -> api_pb2.GetClusterReply:
        record = await self._read(context, CLUSTER, request.name)
        await context.send_initial_metadata(revisions.etag_metadata((record.revision,)))
        reply = api_pb2.GetClusterReply(ok=True)
        reply.cluster.MergeFromString(record.data)  # parsed in place: no copy of a kubeconfig
        return reply

    async def GetClusterList(
        self, request: api_pb2.GetClusterListMsg, context: grpc.aio.ServicerContext
    ) -> api_pb2.GetClusterListReply:
        try:
            records = await self.store.list(CLUSTER)  # ordered by key, which is the name
        except StoreError as error:
            await abort_store_error(context, error)
        clusters = [cluster_item(r.parse(api_pb2.ClusterDetailItem)) for r in records]
        await context.send_initial_metadata(revisions.etag_metadata(r.revision for r in records))
        return api_pb2.GetClusterListReply(ok=True, clusters=clusters)

    async def GetClusterNodesStatus(
        self, request: api_pb2.GetClusterNodesStatusMsg, context: grpc.aio.ServicerContext
    ) -> api_pb2.GetClusterNodesStatusReply:
        name = request.clusterName
        spec_record = await self._read(context, CLUSTER_SPEC, name)
        spec = spec_record.parse(api_pb2.CreateClusterMsg)
        try:
            records = await self.store.list(MACHINE, f"{name}/")
        except StoreError as error:
            await abort_store_error(context, error)
        machines = await asyncio.to_thread(parse_machines, records)
        # The spec orders the machines (pools as added), so its revision is part of the tag.
        held = (spec_record.revision, *(r.revision for r in records))
        await context.send_initial_metadata(revisions.etag_metadata(held))
        statuses = [machine_status(m) for m in sorted_machines(spec, machines)]
        return api_pb2.GetClusterNodesStatusReply(Name=name, count=len(statuses), machines=statuses)

    async def GetUpgradeClusterInformation(
        self, request: api_pb2.GetUpgradeClusterInformationMsg, context: grpc.aio.ServicerContext
    ) -> api_pb2.GetUpgradeClusterInformationReply:
        try:
            found = await cluster_records(self.store, request.name)
        except StoreError as error:
            await abort_store_error(context, error)
        if found is None:
            await abort(context, Code.NOT_FOUND, f"cluster {request.name!r} not found")
        state = await cluster_state(*found)
        status, spec, machines = found
        # What the cluster's records allow, among the versions this server offers (a setting).
        held = (status.revision, spec.revision, *(r.revision for r in machines))
        await context.send_initial_metadata(revisions.etag_metadata(held, self.versions))
        if upgrade_refusal(state) is not None:
            return api_pb2.GetUpgradeClusterInformationReply(ok=False)
        targets = upgrade_targets(state.spec.k8s_version, self.versions)
        return api_pb2.GetUpgradeClusterInformationReply(ok=bool(targets), versions=targets)

    async def GetVersionInformation(
        self, request: api_pb2.GetVersionMsg, context: grpc.aio.ServicerContext
    ) -> api_pb2.GetVersionReply:
        # The first call asks git (a subprocess, so in a thread); later ones return the same
        # reply (never changed after this) without leaving the event loop.
        if self._version is None:
            build = await asyncio.to_thread(running_build)
            self._version = api_pb2.GetVersionReply(ok=True, version_information=build)
        return self._version

    # -- writes ----------------------------------------------------------------------------

    @checks_own_fields
    async def CreateCluster(
        self, request: api_pb2.CreateClusterMsg, context: grpc.aio.ServicerContext
    ) -> api_pb2.CreateClusterReply:
        if request.k8s_version != plain_version(request.k8s_version, self.versions):
            plain = api_pb2.CreateClusterMsg()
            plain.CopyFrom(request)
            plain.k8s_version = plain_version(request.k8s_version, self.versions)
            request = plain
        await self._check(context, validation.check_create(request, self.versions))
        wanted = machine_count(request)
        status = api_pb2.ClusterDetailItem(
            name=request.name,
            status=api_pb2.PROVISIONING,
            status_message=f"0 of {wanted} machine(s) Ready",
        )

        async def create(tx: Transaction) -> None:
            # No read first: a name taken makes the insert fail (and the transaction undo).
            try:
                await tx.create(CLUSTER, request.name, status)
            except AlreadyExists:
                raise Rejected(
                    Code.ALREADY_EXISTS, f"cluster {request.name!r} already exists"
                ) from None
            await tx.create(CLUSTER_SPEC, request.name, request)
            # Reserved first, refused after: one statement, and a refusal undoes both.
            self._refuse_over_capacity(await reserve_machines(tx, wanted) - wanted, wanted)

        await self._write(context, create)
        return api_pb2.CreateClusterReply(ok=True, cluster=cluster_item(status))

    async def DeleteCluster(
        self, request: api_pb2.DeleteClusterMsg, context: grpc.aio.ServicerContext
    ) -> api_pb2.DeleteClusterReply:
        async def delete(tx: Transaction) -> None:
            state = await _existing(tx, request.name)
            if state.status.status == api_pb2.STOPPING:
                return  # already on its way out: deleting again is not an error
            status = api_pb2.ClusterDetailItem()
            status.CopyFrom(state.status)
            status.status = api_pb2.STOPPING
            status.status_message = f"releasing {len(state.machines)} machine(s)"
            await tx.update(CLUSTER, request.name, status)

        await self._write(context, delete)
        return api_pb2.DeleteClusterReply(ok=True, status=_state_name(api_pb2.STOPPING))

    @checks_own_fields
    async def AddNodePool(
        self, request: api_pb2.AddNodePoolMsg, context: grpc.aio.ServicerContext
    ) -> api_pb2.AddNodePoolReply:
        await self._check(context, validation.check_add_pools(request))

        async def add(tx: Transaction) -> None:
            state = await _existing(tx, request.clusterName)
            require_changeable(state, "add node pools to")
            existing = set(pool_names(state.spec))
            taken = [p.name for p in request.worker_node_pools if p.name in existing]
            if taken:
                raise Rejected(
                    Code.ALREADY_EXISTS,
                    f"cluster {state.name!r} already has node pool(s) {', '.join(taken)}",
                )
            total = len(state.spec.worker_node_pools) + len(request.worker_node_pools)
            found = Violations()
            if not validation.check_pool_total(found, "worker_node_pools", total):
                raise Rejected.invalid(found)
            await self._check_capacity(tx, sum(p.count for p in request.worker_node_pools))
            # Added again before its old machines were released: a new deployment for each.
            await _request_repair(tx, state, {p.name for p in request.worker_node_pools})
            spec = _copy_spec(state.spec)
            spec.worker_node_pools.extend(request.worker_node_pools)
            added = ", ".join(p.name for p in request.worker_node_pools)
            await self._reconcile(tx, state, spec, f"adding node pool(s) {added}")

        await self._write(context, add)
        return api_pb2.AddNodePoolReply(ok=True)

    @checks_own_fields
    async def DeleteNodePool(
        self, request: api_pb2.DeleteNodePoolMsg, context: grpc.aio.ServicerContext
    ) -> api_pb2.DeleteNodePoolReply:
        await self._check(context, validation.check_delete_pools(request))

        async def delete(tx: Transaction) -> None:
            state = await _existing(tx, request.clusterName)
            require_changeable(state, "delete node pools of")
            _require_pools(state, request.node_pool_names)
            doomed = set(request.node_pool_names)
            spec = _copy_spec(state.spec)
            kept = [p for p in spec.worker_node_pools if p.name not in doomed]
            if not kept:
                raise Rejected(
                    Code.FAILED_PRECONDITION,
                    f"cannot delete every worker pool of cluster {state.name!r}: "
                    "a cluster needs at least one (delete the cluster instead)",
                )
            del spec.worker_node_pools[:]
            spec.worker_node_pools.extend(kept)
            deleted = ", ".join(request.node_pool_names)
            await self._reconcile(tx, state, spec, f"deleting node pool(s) {deleted}")

        await self._write(context, delete)
        return api_pb2.DeleteNodePoolReply(ok=True)

    @checks_own_fields
    async def ScaleNodePool(
        self, request: api_pb2.ScaleNodePoolMsg, context: grpc.aio.ServicerContext
    ) -> api_pb2.ScaleNodePoolReply:
        await self._check(context, validation.check_scale_pools(request))

        async def scale(tx: Transaction) -> None:
            state = await _existing(tx, request.clusterName)
            require_changeable(state, "scale node pools of")
            counts = {p.name: p.count for p in request.node_pools}
            _require_pools(state, [name for name in counts if name != CONTROL_PLANE_POOL])
            _require_control_plane_size(state, counts.get(CONTROL_PLANE_POOL))
            spec = _copy_spec(state.spec)
            growth = 0
            for pool in spec.worker_node_pools:
                if pool.name in counts:
                    growth += max(0, counts[pool.name] - pool.count)
                    pool.count = counts[pool.name]
            repaired = await _request_repair(tx, state, set(counts))
            if spec == state.spec:
                if repaired:
                    hosts = ", ".join(m.hostname for m in repaired)
                    await self._reconcile(tx, state, spec, f"deploying {hosts} again")
                return
            await self._check_capacity(tx, growth)
            scaled = ", ".join(f"{p.name} to {p.count}" for p in request.node_pools)
            await self._reconcile(tx, state, spec, f"scaling node pool(s) {scaled}")

        await self._write(context, scale)
        return api_pb2.ScaleNodePoolReply(ok=True)

    @checks_own_fields
    async def UpgradeCluster(
        self, request: api_pb2.UpgradeClusterMsg, context: grpc.aio.ServicerContext
    ) -> api_pb2.UpgradeClusterReply:
        await self._check(context, validation.check_upgrade(request))

        version = plain_version(request.version, self.versions)

        async def upgrade(tx: Transaction) -> None:
            state = await _existing(tx, request.name)
            refusal = upgrade_refusal(state)
            if refusal is not None:
                raise Rejected(Code.FAILED_PRECONDITION, f"cannot upgrade now: {refusal}")
            current = state.spec.k8s_version
            targets = upgrade_targets(current, self.versions)
            if version not in targets:
                choices = ", ".join(targets) if targets else "none (it runs the newest)"
                problem = (
                    f"cannot upgrade from {current} to {request.version!r}; "
                    f"the versions it can move to are: {choices}"
                )
                raise Rejected(
                    Code.INVALID_ARGUMENT,
                    f"version: {problem}",
                    [Violation("version", problem)],
                )
            spec = _copy_spec(state.spec)
            spec.k8s_version = version
            message = f"upgrading from {current} to {version}"
            await self._reconcile(tx, state, spec, message)

        await self._write(context, upgrade)
        return api_pb2.UpgradeClusterReply(ok=True)

    # -- shared steps ----------------------------------------------------------------------

    async def _check(self, context: grpc.aio.ServicerContext, violations: Violations) -> None:
        if violations:
            await abort_invalid(context, violations)

    async def _read(self, context: grpc.aio.ServicerContext, kind: str, name: str) -> Record:
        try:
            record = await self.store.get(kind, name)
        except StoreError as error:
            await abort_store_error(context, error)
        if record is None:
            await abort(context, Code.NOT_FOUND, f"cluster {name!r} not found")
        return record

    async def _write(
        self, context: grpc.aio.ServicerContext, change: Callable[[Transaction], Awaitable[None]]
    ) -> None:
        """Run ``change(tx)`` in one transaction; a refusal rolls everything back."""
        revisions.take_if_match(context.invocation_metadata())
        try:
            async with self.store.transaction() as tx:
                await change(tx)
        except Rejected as rejected:
            await abort_rejected(context, rejected)
        except StoreError as error:
            await abort_store_error(context, error)

    async def _reconcile(
        self, tx: Transaction, state: ClusterState, spec: api_pb2.CreateClusterMsg, message: str
    ) -> None:
        """Store the new spec and hand the cluster to the reconciler (RECONCILING)."""
        status = api_pb2.ClusterDetailItem()
        status.CopyFrom(state.status)
        if status.status != api_pb2.PROVISIONING:
            status.status = api_pb2.RECONCILING
        status.status_message = message
        await tx.update(CLUSTER_SPEC, state.name, spec)
        await reserve_machines(tx, machine_count(spec) - machine_count(state.spec))
        await tx.update(CLUSTER, state.name, status)

    async def _check_capacity(self, tx: Transaction, more: int) -> None:
        """RESOURCE_EXHAUSTED unless the IP pool can hold ``more`` machines on top of all others."""
        self._refuse_over_capacity(await reserved_machines(tx), more)

    def _refuse_over_capacity(self, committed: int, more: int) -> None:
        if committed + more > self.machine_capacity:
            free = max(0, self.machine_capacity - committed)
            raise Rejected(
                Code.RESOURCE_EXHAUSTED,
                f"the machine IP pool has {free} free address(es) of {self.machine_capacity}; "
                f"{more} more machine(s) requested",
            )


def _copy_spec(spec: api_pb2.CreateClusterMsg) -> api_pb2.CreateClusterMsg:
    copy = api_pb2.CreateClusterMsg()
    copy.CopyFrom(spec)
    return copy


async def _request_repair(
    tx: Transaction, state: ClusterState, pools: Collection[str]
) -> list[Machine]:
    """Mark the failed machines of ``pools`` to be deployed again; returns them."""
    failed = [m for m in state.machines if m.pool in pools and m.is_failed]
    for machine in failed:
        # The reconciler deploys it again on its next pass (it owns the clock).
        marked = replace(machine, repair_requested=True)
        await tx.update(MACHINE, key_of(marked), machine_data(marked))
    return failed


def _require_control_plane_size(state: ClusterState, count: int | None) -> None:
    """The control plane keeps its size: it is "scaled" only to that, to repair it."""
    size = state.spec.control_plane_nodes.count
    if count is not None and count != size:
        raise Rejected(
            Code.FAILED_PRECONDITION,
            f"the control plane of cluster {state.name!r} keeps its {size} machine(s): scale "
            f"{CONTROL_PLANE_POOL!r} only to {size}, which deploys its failed machines again",
        )


def _require_pools(state: ClusterState, names: Collection[str]) -> None:
    existing = set(pool_names(state.spec))
    unknown = [name for name in names if name not in existing]
    if unknown:
        raise Rejected(
            Code.NOT_FOUND,
            f"cluster {state.name!r} has no node pool(s) {', '.join(unknown)} "
            f"(its pools: {', '.join(pool_names(state.spec))})",
        )
