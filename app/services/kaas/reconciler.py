"""The cluster reconciler: moves stored clusters toward their specs, one clock step at a time.

It keeps nothing the store does not: each pass takes in what was written since the previous one
(:class:`~app.services.kaas.mirror.ClusterMirror`, a copy of the stored clusters read whole once
a term), decides what the machines and the status of each cluster with something to do should
be now (:func:`plan_cluster`, a pure function of the stored state and the clock step), and
writes the changes of each cluster in one transaction. A restart, or another replica taking over
as leader, reads the store whole and continues from it.

What a pass does for one cluster:

- ``STOPPING``: release every machine; delete a machine's record once MaaS has it back; delete
  the cluster (spec and status) when no machine is left.
- Otherwise: advance every machine to the current step; release machines the spec no longer
  wants (scaled down, pool deleted); allocate machines for empty slots (IPs are the lowest free
  ones over every cluster; an exhausted pool leaves the cluster waiting, with a message); when
  no machine is upgrading, start upgrading the next machine that runs another version than the
  spec's, control plane first (one at a time, as ``kubeadm upgrade`` does).
- Failed deployments are retried: a failed machine is deployed again (same slot, address and
  system id; each deployment draws its simulated fault anew) after a backoff of
  ``RETRY_BACKOFF_STEPS * 2**n`` steps before the n-th retry, at most ``MAX_DEPLOY_RETRIES``
  times. Scaling the machine's pool (the user's repair action) redeploys it at once, with a fresh
  retry budget. A slot whose old machine is still being released (its pool was deleted and added
  again) gets its new machine once the old one is gone; the slot's deployments so far are kept
  (``kaas.deployments``), so that machine's deployment is a new one too, with a fresh budget.
- Status: a failed machine makes the cluster ``ERROR`` when the control plane lost its etcd
  quorum or no worker is left, ``DEGRADED`` otherwise; ``status_message`` names every failure
  and, for each, the retry to come or that retries gave up. When every wanted machine is Ready on
  the spec's version and no unwanted one is left, the cluster is ``RUNNING``. Until then it stays
  ``PROVISIONING`` (new) or ``RECONCILING`` (changed, or retrying a deployment).
- Kubeconfig: issued once (server on the first Ready control-plane machine) as soon as a quorum
  of the control plane is Ready and the cluster is past ``PROVISIONING``: a ``DEGRADED`` cluster
  whose control plane is up serves one, a new cluster still gets it when it is ``RUNNING``.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import math
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field, replace
from typing import TypeVar

from google.protobuf import struct_pb2

from app.services.kaas.mirror import ClusterMirror
from app.services.kaas.records import (
    CLUSTER,
    CLUSTER_SPEC,
    MACHINE,
    ClusterState,
    Slot,
    cluster_records,
    desired_machines,
    forget_deployments,
    keep_deployments,
    key_of,
    machine_data,
    reserve_machines,
    sorted_machines,
)
from app.sim.clock import Clock
from app.sim.kubeconfig import issue_kubeconfig
from app.sim.machine_model import Machine, Phase, Role
from app.sim.machines import IpPoolExhausted, MachineProvider
from app.store import ObjectStore, Record, Transaction
from gen.cnct.kaas.api import api_pb2

log = logging.getLogger(__name__)

# Passes are at least this far apart in wall time: with a near-zero test step, a pass per step
# would only burn CPU (machines jump over any number of steps at once).
MIN_PASS_SECONDS = 0.01
# Automatic redeployments of a failed machine, and the backoff before the first (it doubles).
MAX_DEPLOY_RETRIES = 3
RETRY_BACKOFF_STEPS = 2
_DEPLOYING = frozenset({Phase.ALLOCATED, Phase.DEPLOYING, Phase.JOINING})


def retry_backoff(retries: int) -> int:
    """Clock steps a failed machine waits before its next automatic retry."""
    return RETRY_BACKOFF_STEPS * 2**retries


def _retry_due(machine: Machine, now: int) -> bool:
    if machine.repair_requested:
        return True
    step = _retry_step(machine)
    return step is not None and now >= step


def _retry_step(machine: Machine) -> int | None:
    """The step a failed machine is deployed again at by itself (None: retries gave up)."""
    if machine.retries >= MAX_DEPLOY_RETRIES:
        return None
    return machine.phase_started + retry_backoff(machine.retries)


def _failure_note(machine: Machine) -> str:
    if machine.retries < MAX_DEPLOY_RETRIES:
        return (
            f"{machine.failure_reason} (retry {machine.retries + 1} of {MAX_DEPLOY_RETRIES} "
            f"after {retry_backoff(machine.retries)} step(s))"
        )
    return (
        f"{machine.failure_reason} (gave up after {MAX_DEPLOY_RETRIES} retries; "
        f"scale pool {machine.pool!r} to deploy it again)"
    )


Status = api_pb2.ClusterStatus


@dataclass
class Outcome:
    """What one pass changes for one cluster."""

    status: api_pb2.ClusterDetailItem
    machines: list[Machine] = field(default_factory=list)  # created or changed
    released: list[Machine] = field(default_factory=list)  # records to delete
    gone: bool = False  # delete the cluster itself
    kubeconfig_server_ip: str = ""  # issue the kubeconfig on this control-plane address
    waiting: bool = False  # for addresses: other clusters releasing machines may free some

    @property
    def changes(self) -> bool:
        return bool(self.machines or self.released or self.gone or self.kubeconfig_server_ip)


def plan_cluster(
    state: ClusterState, provider: MachineProvider, now: int, in_use_ips: Collection[str]
) -> Outcome:
    """What the cluster's machines and status should be at step ``now``."""
    status = api_pb2.ClusterDetailItem()
    status.CopyFrom(state.status)
    outcome = Outcome(status)
    current = {(m.pool, m.index): m for m in state.machines}

    def keep(slot: Slot, machine: Machine) -> Machine:
        if machine != current.get(slot):
            outcome.machines.append(machine)
        return machine

    if state.status.status == api_pb2.STOPPING:
        left = 0
        for slot, machine in current.items():
            machine = provider.advance(provider.release(machine, now), now)
            if machine.phase is Phase.RELEASED:
                outcome.released.append(machine)
            else:
                keep(slot, machine)
                left += 1
        outcome.gone = left == 0
        status.status_message = f"releasing {left} machine(s)"
        return outcome

    wanted = desired_machines(state.spec)
    machines: dict[Slot, Machine] = {}
    unwanted = 0
    occupied: set[Slot] = set()  # wanted slots whose old machine is still being released
    for slot, machine in current.items():
        machine = provider.advance(machine, now)
        leaving = machine.phase in (Phase.RELEASING, Phase.RELEASED)
        if slot in wanted and not leaving:
            if machine.is_failed and _retry_due(machine, now):
                machine = provider.advance(
                    provider.redeploy(machine, now, automatic=not machine.repair_requested), now
                )
            machines[slot] = keep(slot, machine)
            continue
        machine = provider.advance(provider.release(machine, now), now)
        if machine.phase is Phase.RELEASED:
            outcome.released.append(machine)
        else:
            keep(slot, machine)
            unwanted += 1
        if slot in wanted:
            occupied.add(slot)

    waiting_for_ips = ""
    missing = [
        replace(request, attempt=state.deployments.get(slot, 0))
        for slot, request in wanted.items()
        if slot not in machines and slot not in occupied
    ]
    if missing:
        try:
            for machine in provider.allocate(missing, in_use_ips=in_use_ips, now=now):
                machines[(machine.pool, machine.index)] = keep(
                    (machine.pool, machine.index), machine
                )
        except IpPoolExhausted as exhausted:
            waiting_for_ips = f"waiting for machine addresses: {exhausted}"
            outcome.waiting = True

    target = state.spec.k8s_version
    ordered = sorted_machines(state.spec, machines.values())
    upgrading = [m for m in ordered if m.phase is Phase.UPGRADING]
    if not upgrading and not waiting_for_ips:
        behind = [m for m in ordered if m.is_ready and m.k8s_version != target]
        if behind:
            started = provider.upgrade(behind[0], target, now)
            machines[(started.pool, started.index)] = keep((started.pool, started.index), started)
            upgrading = [started]

    ordered = sorted_machines(state.spec, machines.values())
    failed = [m for m in ordered if m.is_failed]
    ready = [m for m in ordered if m.is_ready and m.k8s_version == target]
    settled = not waiting_for_ips and not unwanted and len(ready) == len(wanted)
    retrying = [m for m in ordered if m.attempt and m.phase in _DEPLOYING]
    if failed:
        status.status = _failure_status(state.spec, ordered)
        status.status_message = f"{len(failed)} of {len(wanted)} machine(s) failed: " + "; ".join(
            _failure_note(m) for m in failed
        )
    elif settled:
        status.status = api_pb2.RUNNING
        status.status_message = f"{len(ready)} machine(s) Ready on Kubernetes {target}"
    else:
        if status.status != api_pb2.PROVISIONING:
            status.status = api_pb2.RECONCILING
        if waiting_for_ips:
            status.status_message = waiting_for_ips
        elif upgrading:
            done = sum(m.k8s_version == target for m in ordered)
            status.status_message = (
                f"upgrading {upgrading[0].hostname} to {target} "
                f"({done} of {len(ordered)} machine(s) upgraded)"
            )
        elif unwanted:
            status.status_message = f"releasing {unwanted} machine(s)"
        elif retrying:
            status.status_message = f"{len(ready)} of {len(wanted)} machine(s) Ready; " + "; ".join(
                f"redeploying {m.hostname} ("
                + (f"retry {m.retries} of {MAX_DEPLOY_RETRIES}" if m.retries else "as asked")
                + ")"
                for m in retrying
            )
        else:
            status.status_message = f"{len(ready)} of {len(wanted)} machine(s) Ready"
    if not status.kubeconfig and status.status != api_pb2.PROVISIONING:
        outcome.kubeconfig_server_ip = _control_plane_address(state.spec, ordered)
    return outcome


def _control_plane_address(spec: api_pb2.CreateClusterMsg, machines: list[Machine]) -> str:
    """The first Ready control-plane machine's address when a quorum of them is Ready, else ""."""
    up = [m for m in machines if m.role is Role.CONTROL_PLANE and m.is_ready]
    if len(up) <= spec.control_plane_nodes.count // 2:
        return ""
    return up[0].ip


def _failure_status(spec: api_pb2.CreateClusterMsg, machines: list[Machine]) -> Status:
    """ERROR when etcd lost its quorum or no worker can run pods; DEGRADED otherwise."""
    failed_planes = sum(m.is_failed and m.role is Role.CONTROL_PLANE for m in machines)
    workers = [m for m in machines if m.role is Role.WORKER]
    if failed_planes > spec.control_plane_nodes.count // 2 or all(m.is_failed for m in workers):
        return api_pb2.ERROR
    return api_pb2.DEGRADED


# Clusters whose changes are being written at once, each in a transaction of its own: they
# share database commits (group commit), so a pass over a thousand clusters costs a few fsyncs;
# callers' writes go first (app.store.turn_lock).
WRITES_IN_FLIGHT = 16
# After a pass, the reconciler rests at least this share of the pass's own length.
REST_SHARE = 0.5
# Planning runs on the event loop in slices this long, requests in between. When they had work
# waiting (their turn in between took this long), planning takes at most BUSY_SHARE of the loop.
SLICE_SECONDS = 0.002
BUSY_SECONDS = 0.0005
BUSY_SHARE = 0.25
T = TypeVar("T")


Seen = tuple[int, int, frozenset[tuple[str, int]]]  # status, spec and machine revisions


@dataclass(frozen=True)
class _Planned:
    """One cluster's changes, planned from a snapshot of the store taken at ``seen``."""

    state: ClusterState
    outcome: Outcome
    forms: list[struct_pb2.Struct]  # the stored form of each of ``outcome.machines``
    seen: Seen


class ClusterReconciler:
    """The leader-only job that drives every stored cluster toward its spec.

    A pass takes in what was written since the previous one (:class:`ClusterMirror`), plans
    the clusters that may have something to do on the loop in short slices, then writes each
    changed cluster in its own transaction, ``WRITES_IN_FLIGHT`` at a time. A cluster written
    by someone else since the snapshot (a user's scale, delete or upgrade) is left to the next
    pass, which plans it from what was written.

    Which clusters a pass plans: those written since the previous pass, and those due. A
    cluster planned with nothing to change is due again when one of its machines next moves by
    itself (a phase ends, a failed deployment's retry comes); one waiting for addresses is due
    every pass; a running cluster nothing is written to is never due. So a pass costs what
    changed and what is in progress, not every cluster stored.
    """

    def __init__(self, store: ObjectStore, provider: MachineProvider, clock: Clock) -> None:
        self.store = store
        self.provider = provider
        self.clock = clock
        self._steps_per_pass = max(1, math.ceil(MIN_PASS_SECONDS / clock.step_seconds))
        self._forget()

    def _forget(self) -> None:
        """Start from the store alone, as a new leader does."""
        self._mirror = ClusterMirror(self.store)
        # The step each cluster is to be planned again at, and the same as a heap of
        # (step, name) whose entries that no longer match ``_due`` are stale.
        self._due: dict[str, int] = {}
        self._wakeups: list[tuple[int, str]] = []

    async def run(self) -> None:
        """Reconcile on every pass until cancelled."""
        self._forget()  # another leader may have written anything since a previous term
        while True:
            started = time.monotonic()
            await self.reconcile_all()
            # However far behind, the next pass waits a share of this one's length: requests
            # keep most of the process while a backlog is worked through.
            rest = asyncio.sleep((time.monotonic() - started) * REST_SHARE)
            await asyncio.gather(rest, self.clock.sleep_steps(self._steps_per_pass))

    async def reconcile_all(self) -> int:
        """One pass; returns how many clusters changed."""
        now = self.clock.now()
        names = await self._mirror.catch_up() | self._take_due(now)
        planned = await _in_slices(self._plan_pass(names, now))
        limit = asyncio.Semaphore(WRITES_IN_FLIGHT)

        async def write(plan: _Planned) -> bool:
            async with limit:
                return await self._write(plan)

        written = await asyncio.gather(*(write(plan) for plan in planned), return_exceptions=True)
        for plan, result in zip(planned, written, strict=True):
            if isinstance(result, BaseException):
                log.error("cluster %s: writing its changes failed: %s", plan.state.name, result)
        return sum(result is True for result in written)

    def _take_due(self, now: int) -> set[str]:
        due: set[str] = set()
        while self._wakeups and self._wakeups[0][0] <= now:
            step, name = heapq.heappop(self._wakeups)
            if self._due.get(name) == step:
                del self._due[name]
                due.add(name)
        return due

    def _plan_again(self, name: str, step: int | None) -> None:
        """Plan ``name`` again at ``step`` (None: once something of it is written)."""
        if step is None:
            self._due.pop(name, None)
        elif self._due.get(name) != step:
            self._due[name] = step
            heapq.heappush(self._wakeups, (step, name))

    def _next_change(self, state: ClusterState, outcome: Outcome, now: int) -> int | None:
        """When a cluster planned with nothing to change may have something to do by itself."""
        if outcome.waiting:
            return now  # the next pass: any cluster may have freed addresses since
        steps = [
            self.provider.changes_at(m) if not m.is_failed else _retry_step(m)
            for m in state.machines
        ]
        return min((step for step in steps if step is not None), default=None)

    def _plan_pass(self, names: set[str], now: int) -> Iterator[_Planned | None]:
        """The changes of the clusters ``names`` at step ``now``, one cluster (or machine
        decoded) at a time."""
        yield from self._mirror.decode_written()
        in_use = self._mirror.addresses_in_use()
        for name in sorted(names):
            status, spec = self._mirror.status(name), self._mirror.spec(name)
            if status is None or spec is None:
                self._plan_again(name, None)  # its other half's write will touch it
                yield None
                continue
            own = self._mirror.machine_records(name)
            seen = (status.revision, spec.revision, frozenset((r.key, r.revision) for r in own))
            state = ClusterState(
                spec.parse(api_pb2.CreateClusterMsg),
                status.parse(api_pb2.ClusterDetailItem),
                tuple(self._mirror.machine(r) for r in own),
                self._mirror.deployments(name),
            )
            outcome = plan_cluster(state, self.provider, now, in_use)
            if not outcome.changes and outcome.status == state.status:
                self._plan_again(name, self._next_change(state, outcome, now))
                yield None  # nothing to write
                continue
            # Again next pass even if the write is skipped or fails (a write touches it anyway).
            self._plan_again(name, now)
            # Addresses freed during a pass are handed out again from the next one: a cluster
            # whose write is skipped (changed meanwhile) may still hold them.
            in_use.update(m.ip for m in outcome.machines if m.holds_ip)
            if outcome.kubeconfig_server_ip:
                # Issued once and stored: the CA key and token are random, never re-rendered.
                outcome.status.kubeconfig = issue_kubeconfig(
                    name, outcome.kubeconfig_server_ip, now=self.clock.time_of(now)
                )
            forms = [machine_data(m) for m in outcome.machines]
            yield _Planned(state, outcome, forms, seen)

    async def _write(self, plan: _Planned) -> bool:
        """Write one cluster's planned changes if it is as planned from; whether it was."""
        state, outcome, name = plan.state, plan.outcome, plan.state.name
        written: list[tuple[Record, Machine]] = []
        async with self.store.transaction() as tx:
            if await _revisions(tx, name) != plan.seen:
                return False  # written meanwhile: the next pass plans it again
            for machine in outcome.released:
                await tx.delete(MACHINE, key_of(machine))
                if state.status.status != api_pb2.STOPPING:
                    await keep_deployments(tx, machine)
            stored = {(m.pool, m.index) for m in state.machines}
            for machine, form in zip(outcome.machines, plan.forms, strict=True):
                if (machine.pool, machine.index) in stored:
                    record = await tx.update(MACHINE, key_of(machine), form)
                else:
                    record = await tx.create(MACHINE, key_of(machine), form)
                written.append((record, machine))
            if outcome.gone:
                await forget_deployments(tx, name)
                await tx.delete(CLUSTER, name)
                await tx.delete(CLUSTER_SPEC, name)
                await reserve_machines(tx, -len(desired_machines(state.spec)))
                log.info("cluster %s deleted: every machine released", name)
                return True
            if outcome.status.status != state.status.status:
                log.info(
                    "cluster %s: %s -> %s",
                    name,
                    api_pb2.ClusterStatus.Name(state.status.status),
                    api_pb2.ClusterStatus.Name(outcome.status.status),
                )
            await tx.update(CLUSTER, name, outcome.status)
        # Committed: the machines need not be decoded again from their events.
        for record, machine in written:
            self._mirror.remember(record, machine)
        return True


async def _revisions(tx: Transaction, name: str) -> Seen | None:
    """The revisions of the cluster's status, spec and machines, as ``_Planned.seen`` holds them."""
    found = await cluster_records(tx, name)
    if found is None:
        return None
    status, spec, machines = found
    return status.revision, spec.revision, frozenset((r.key, r.revision) for r in machines)


async def _in_slices(steps: Iterator[T | None]) -> list[T]:
    """Run ``steps`` on the loop, letting other callers in every ``SLICE_SECONDS``: planning a
    thousand clusters takes a while, and on a worker thread it held the interpreter lock
    against the loop at every statement the loop ran (each waited out the switch interval).

    A busy server's callers keep most of the loop: a thousand new clusters planned at once
    took half of it from a storm of creates, and p99 latency went from 0.1 to 0.6 s."""
    results: list[T] = []
    turn = time.monotonic()
    for step in steps:
        if step is not None:
            results.append(step)
        now = time.monotonic()
        if now - turn >= SLICE_SECONDS:
            await asyncio.sleep(0)
            others = time.monotonic() - now
            if others >= BUSY_SECONDS:
                own = now - turn
                await asyncio.sleep(max(0.0, own / BUSY_SHARE - own - others))
            turn = time.monotonic()
    return results
