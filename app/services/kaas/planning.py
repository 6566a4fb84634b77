"""Planning one cluster: what its machines and status should be at a clock step.

:func:`plan_cluster` is a pure function of the stored state and the step; the reconciler
(:mod:`app.services.kaas.reconciler`) runs it and writes what it decides. What it decides:

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

from collections.abc import Collection
from dataclasses import dataclass, field, replace

from app.services.kaas.records import ClusterState, Slot, desired_machines, sorted_machines
from app.sim.machine_model import Machine, Phase, Role
from app.sim.machines import IpPoolExhausted, MachineProvider
from gen.cnct.kaas.api import api_pb2

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

    def release(slot: Slot, machine: Machine) -> bool:
        """Release the machine; whether it is still on its way (else its record goes)."""
        machine = provider.advance(provider.release(machine, now), now)
        if machine.phase is Phase.RELEASED:
            outcome.released.append(machine)
            return False
        keep(slot, machine)
        return True

    if state.status.status == api_pb2.STOPPING:
        left = sum(release(slot, machine) for slot, machine in current.items())
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
        unwanted += release(slot, machine)
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


def next_change(
    state: ClusterState, outcome: Outcome, provider: MachineProvider, now: int
) -> int | None:
    """The step at which a cluster planned with nothing to change may have something to do by
    itself (None: only once something of it is written)."""
    if outcome.waiting:
        return now  # the next pass: any cluster may have freed addresses since
    steps = [provider.changes_at(m) if not m.is_failed else _retry_step(m) for m in state.machines]
    return min((step for step in steps if step is not None), default=None)
