"""The simulated cloudlet resource manager (CRM): carries out Cloudlet, ClusterInst and AppInst
operations on the simulated clock and reports them as an external CRM would.

It runs on the leader for every cloudlet that has no external CRM connected (a Notify peer of
type ``NODE_CRM`` naming the cloudlet; that one's reports drive its objects instead). Each
operation is a plan of work steps that scales with what is built, e.g. a ClusterInst create::

    Create requested
    Creating Heat Stack for <cluster>
    Creating node 1 of 3 (sim.medium)          one per master and node; bigger node flavors
    ...                                        take more clock steps per node
    Creating Dedicated Root LB (<ip>)          dedicated ip_access only
    Waiting for Cluster to Initialize
    Ready

Every step is reported through :func:`app.services.edge.crm.apply_report`, the path an external
CRM's Info notices take, so both behave the same. Everything is in the store, so work resumes
after a restart.

Faults: each Create/Update/Delete of a Cloudlet, ClusterInst or AppInst fails with probability
``PORTICO_SIM_FAILURE_RATIO``, drawn from ``PORTICO_SIM_SEED``, the object's key, the action and
the revision the operation was accepted at (so the same requests on a fresh store fail the same
way, and a retry is a new draw). A failure is decided at the last work step and reported as the
action's error state with a reason from :data:`FAULTS`. A ClusterInst whose Cloudlet failed to
be created, or an AppInst whose ClusterInst did, fails as well.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import app.services.edge.kinds as k
from app.services.edge import capacity, crm, network
from app.services.edge.progress import CREATE, DELETE, STATES, TS, UPDATE, Progress, record
from app.services.edge.records import PROGRESS, load
from app.services.names import dns_name
from app.sim.clock import Clock
from app.sim.machines import FaultInjection
from app.sim.seeded import unit_interval
from app.store import ObjectStore, Transaction
from gen.edgeproto import cloudlet_pb2

PHASE_STEPS = 1
Step = tuple[int, str, int]  # tracked state, message, clock steps it takes

FAULTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("Cloudlet", "create"): (
        "Failed to create platform VM: quota exceeded for instances",
        "Timed out waiting for the CRM to connect",
    ),
    ("Cloudlet", "update"): ("Failed to update platform VM: image not found",),
    ("Cloudlet", "delete"): ("Failed to delete platform VM: the VM is locked",),
    ("ClusterInst", "create"): (
        "Heat stack create failed: No valid host was found",
        "Timed out waiting for the Kubernetes master to become ready",
    ),
    ("ClusterInst", "update"): ("Heat stack update failed: quota exceeded for the new nodes",),
    ("ClusterInst", "delete"): ("Heat stack delete failed: a volume is still attached",),
    ("AppInst", "create"): (
        "Image pull failed: manifest unknown",
        "Deployment did not become ready: CrashLoopBackOff",
    ),
    ("AppInst", "update"): ("Rolling update failed: new pods did not become ready",),
    ("AppInst", "delete"): ("Timed out deleting the Kubernetes deployment",),
}


class Faults:
    """Which operations fail: the share and seed of the simulation's fault injection."""

    def __init__(self, injection: FaultInjection | None = None) -> None:
        self.injection = injection or FaultInjection()

    def reason(self, progress: Progress) -> str | None:
        """Why the operation fails, or None when it succeeds."""
        subject = f"edge/{progress.record_key}/{progress.action}/{progress.salt}"
        if not self.injection.fails(subject):
            return None
        reasons = FAULTS[(progress.type_name, progress.action)]
        pick = int(unit_interval("edge-fault-reason", self.injection.seed, subject) * len(reasons))
        return f"{reasons[pick]} (simulated fault)"


def _node_steps(flavor: cloudlet_pb2.FlavorInfo | None) -> int:
    """Clock steps to build one node: bigger node flavors take longer."""
    return PHASE_STEPS * max(1, (flavor.vcpus if flavor is not None else 1) // 4)


async def _cluster_plan(tx: Transaction, action: str, inst: Any) -> list[Step]:
    name = inst.key.cluster_key.name
    working = STATES[action][1]
    info = await load(tx, k.CLOUDLET_INFO, inst.key.cloudlet_key)
    flavors = list(info.flavors) if info is not None and info.flavors else capacity.NODE_FLAVORS
    node = next((f for f in flavors if f.name == inst.node_flavor), None)
    nodes = capacity.node_count(inst)
    dedicated = inst.ip_access == network.IA.IP_ACCESS_DEDICATED
    if action == DELETE:
        steps = [(working, f"Deleting Heat Stack for {name}", PHASE_STEPS)]
        if dedicated:
            steps.append((working, f"Deleting Dedicated Root LB ({inst.allocated_ip})", 1))
        return steps
    verb = "Creating" if action == CREATE else "Updating"
    steps = [(working, f"{verb} Heat Stack for {name}", PHASE_STEPS)]
    steps += [
        (working, f"{verb} node {i} of {nodes} ({inst.node_flavor})", _node_steps(node))
        for i in range(1, nodes + 1)
    ]
    if dedicated and action == CREATE:
        steps.append((working, f"Creating Dedicated Root LB ({inst.allocated_ip})", PHASE_STEPS))
    steps.append((working, "Waiting for Cluster to Initialize", PHASE_STEPS))
    return steps


async def _app_plan(tx: Transaction, action: str, inst: Any) -> list[Step]:
    working = STATES[action][1]
    name = dns_name(inst.key.app_key.name, inst.key.app_key.version)
    flavor = await capacity.flavor_resources(tx, inst.flavor)
    if action == DELETE:
        return [(working, f"Deleting Kubernetes Deployment {name}", PHASE_STEPS)]
    app = await load(tx, k.APP, inst.key.app_key)
    steps = []
    if action == CREATE and app is not None and app.image_path:
        steps.append((working, f"Pulling image {app.image_path}", PHASE_STEPS))
    verb = "Creating" if action == CREATE else "Updating"
    steps.append(
        (working, f"{verb} Kubernetes Deployment {name}", max(1, flavor.vcpus // 4) * PHASE_STEPS)
    )
    if action == CREATE and inst.mapped_ports:
        ports = ", ".join(
            f"{p.public_port}/{network.proto_name(p.proto)} {p.path_prefix}".strip()
            for p in inst.mapped_ports
        )
        steps.append((working, f"Configuring load balancer: {ports}", PHASE_STEPS))
    steps.append((working, "Waiting for AppInst to Start", PHASE_STEPS))
    return steps


async def _cloudlet_plan(tx: Transaction, action: str, cloudlet: Any) -> list[Step]:
    working = STATES[action][1]
    if action == DELETE:
        return [(working, "Deleting platform VM", PHASE_STEPS)]
    if action == CREATE:
        return [
            (working, "Creating platform VM", PHASE_STEPS),
            (working, "Starting CRMServer", PHASE_STEPS),
            (working, "Setting up the shared Root LB", PHASE_STEPS),
        ]
    return [(working, "Updating platform VM", PHASE_STEPS)]


PLANS: dict[str, Callable[[Transaction, str, Any], Any]] = {
    k.CLOUDLET.name: _cloudlet_plan,
    k.CLUSTER_INST.name: _cluster_plan,
    k.APP_INST.name: _app_plan,
}


def _parent(progress: Progress) -> str | None:
    """The progress key of the object ``progress``'s create waits for."""
    if progress.action != CREATE or progress.kind is k.CLOUDLET:
        return None
    key = progress.key_message()
    if progress.kind is k.CLUSTER_INST:
        return f"{k.CLOUDLET.name}/{k.key_string(key.cloudlet_key)}"
    return f"{k.CLUSTER_INST.name}/{k.key_string(key.cluster_inst_key)}"


async def _parent_failure(tx: Transaction, progress: Progress) -> str | None:
    """Why a create cannot go on because what it is built on failed, or None."""
    if progress.action != CREATE or progress.kind is k.CLOUDLET:
        return None
    key = progress.key_message()
    if progress.kind is k.CLUSTER_INST:
        info = await load(tx, k.CLOUDLET_INFO, key.cloudlet_key)
        if info is not None and info.state == cloudlet_pb2.CLOUDLET_STATE_ERRORS:
            return f"Cloudlet {k.key_string(key.cloudlet_key)} is in error"
        return None
    cluster = await load(tx, k.CLUSTER_INST, key.cluster_inst_key)
    if cluster is not None and cluster.state in (TS.CREATE_ERROR, TS.DELETE_ERROR):
        return f"ClusterInst {k.key_string(key.cluster_inst_key)} is {TS.Name(cluster.state)}"
    return None


def _report(progress: Progress, state: int, errors: list[str]) -> Any:
    """The Info the simulated CRM sends for ``progress`` in ``state``."""
    info_kind = k.INFO_OF[progress.type_name]
    info: Any = info_kind.message(key=progress.key_message())
    info.state = crm.cloudlet_state(state) if progress.kind is k.CLOUDLET else state
    info.errors.extend(errors)
    if progress.kind is k.CLOUDLET and state == TS.READY:
        sim = capacity.SIMULATED_CLOUDLET
        info.os_max_ram, info.os_max_vcores, info.os_max_vol_gb = sim.ram, sim.vcpus, sim.disk
        info.flavors.extend(capacity.NODE_FLAVORS)
    if progress.kind is k.APP_INST and state == TS.READY:
        app_key = progress.key_message().app_key
        info.runtime_info.container_ids.append(dns_name(app_key.name, app_key.version))
    return info


class ResourceManager:
    """The leader's job moving operations along on the clock."""

    def __init__(
        self, store: ObjectStore, clock: Clock, controller: str = "", faults: Faults | None = None
    ) -> None:
        self.store = store
        self.clock = clock
        self.controller = controller
        self.faults = faults or Faults()

    async def run(self) -> None:
        """Advance due operations, then sleep until the next is due or a new one arrives."""
        while True:
            revision = await self.store.current_revision()
            wait = await self.advance_due()
            await self._wait_for_progress(revision, wait)

    async def advance_due(self) -> float | None:
        """Move every due operation one step on; seconds until the next is due (None: idle)."""
        records = await self.store.list(PROGRESS)
        in_flight = {r.key: Progress.from_bytes(r.data) for r in records}
        external = await crm.external_crm_cloudlets(self.store)
        now = self.clock.now()
        nearest: int | None = None
        for progress in in_flight.values():
            if k.key_string(crm.cloudlet_of_key(progress.key_message())) in external:
                continue  # its own CRM reports on it
            due = progress.since + max(1, progress.wait)
            if now < due:
                nearest = due if nearest is None else min(nearest, due)
                continue
            parent = in_flight.get(_parent(progress) or "")
            if parent is not None and parent.action == CREATE:
                continue  # woken again when the parent's progress changes
            await self.advance(progress.record_key)
            nearest = now + PHASE_STEPS if nearest is None else min(nearest, now + PHASE_STEPS)
        if nearest is None:
            return None
        return max(0.0, (nearest - self.clock.now()) * self.clock.step_seconds)

    async def advance(self, record_key: str) -> None:
        """Carry one operation one work step further (reporting its end after the last)."""
        async with self.store.transaction() as tx:
            stored = await tx.get(PROGRESS, record_key)
            if stored is None:
                return
            progress = Progress.from_bytes(stored.data)
            kind, key = progress.kind, progress.key_message()
            obj = await load(tx, kind, key)
            now = self.clock.now()
            if obj is None:  # removed under it (e.g. by an override): nothing left to do
                await tx.delete(PROGRESS, record_key)
                return
            blocked = await _parent_failure(tx, progress)
            if blocked is not None:
                await crm.fail(tx, progress, STATES[progress.action][3], [blocked], now)
                return
            plan = await PLANS[kind.name](tx, progress.action, obj)
            info_kind = k.INFO_OF[kind.name]
            if progress.step < len(plan):
                state, message, steps = plan[progress.step]
                if kind is k.CLOUDLET and progress.action == UPDATE:
                    # CloudletState has no "updating": the info stays READY meanwhile.
                    await record(tx, progress.moved(state, message, now, steps))
                    return
                report = _report(progress, state, [])
                await crm.apply_report(tx, info_kind, report, now, message=message, wait=steps)
                return
            reason = self.faults.reason(progress)
            if reason is not None:
                error = _report(progress, STATES[progress.action][3], [reason])
                await crm.apply_report(tx, info_kind, error, now)
                return
            success = _report(progress, STATES[progress.action][2], [])
            if kind is k.CLOUDLET and self.controller:
                success.controller = self.controller
            await crm.apply_report(tx, info_kind, success, now, gone=progress.action == DELETE)

    async def _wait_for_progress(self, revision: int, timeout: float | None) -> None:
        with contextlib.suppress(TimeoutError):
            async with (
                asyncio.timeout(timeout),
                contextlib.aclosing(self.store.watch(PROGRESS, revision)) as events,
            ):
                async for _ in events:
                    return
