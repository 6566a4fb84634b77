"""The MaaS machine provider: allocate, deploy, upgrade and release bare-metal machines.

A :class:`~app.sim.machine_model.Machine` is plain, serializable data; the provider never keeps
machines in memory. Callers persist machines and hand them back with the current clock step to
:meth:`advance`, which is a pure function of (machine, step) — advancing one step at a time or
jumping many steps at once (after a restart) yields the same machine. Lifecycle, with durations
in clock steps::

    Allocated ─▶ Deploying ─┬─▶ Deployed/NotReady ─▶ Deployed/Ready
                            │                          ⇅ upgrade
                            │                        Deployed/Ready,SchedulingDisabled
                            └─▶ Failed deployment
    any phase ─release─▶ Releasing ─▶ Released

Which machines fail deployment is decided at allocation by :class:`FaultInjection`: a hash of
the seed and the machine's system id, so the same machines fail on every run.

Errors::

    MachineProviderError
    ├── IpPoolExhausted          no free address left in the pool
    └── MachineTransitionError   the machine's phase does not allow the request
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Protocol

from app.sim.machine_model import Machine, MachineRequest, Phase, hostname_for, system_id_for
from app.sim.seeded import unit_interval

DEFAULT_CIDR = "10.20.0.0/16"


class MachineProviderError(Exception):
    """Base of every error the machine provider raises."""


class IpPoolExhausted(MachineProviderError):
    """The pool has fewer free addresses than machines requested."""


class MachineTransitionError(MachineProviderError):
    """The machine's current phase does not allow the requested change."""


_DEPLOYMENT_FAULTS = (
    "the machine did not PXE boot before the deployment timeout",
    "curtin could not write the OS image to /dev/sda",
    "the BMC stopped answering IPMI power queries",
    "cloud-init reported an error on first boot",
    "the kubelet could not reach the API server to join the cluster",
)


@dataclass(frozen=True)
class MachineTimings:
    """How many clock steps each lifecycle phase lasts."""

    allocate_steps: int = 1
    deploy_steps: int = 3
    # Machines do not all finish at once: each adds 0..jitter steps, fixed by its system id.
    deploy_jitter_steps: int = 2
    join_steps: int = 2
    upgrade_steps: int = 2
    release_steps: int = 1

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) < 0:
                raise ValueError(f"{f.name} must not be negative")


@dataclass(frozen=True)
class FaultInjection:
    """Which share of machines fail deployment; the same seed picks the same machines."""

    failure_ratio: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.failure_ratio <= 1.0:
            raise ValueError(f"failure_ratio must be within [0, 1], got {self.failure_ratio!r}")

    def fails(self, system_id: str, attempt: int = 0) -> bool:
        """Whether the machine with this system id fails its ``attempt``-th deployment."""
        parts: tuple[object, ...] = (system_id,) if attempt == 0 else (system_id, attempt)
        return unit_interval("fault", self.seed, *parts) < self.failure_ratio

    def reason(self, system_id: str) -> str:
        """Why the machine failed, chosen deterministically."""
        pick = int(unit_interval("fault-reason", self.seed, system_id) * len(_DEPLOYMENT_FAULTS))
        return _DEPLOYMENT_FAULTS[pick]


class IpPool:
    """Addresses for machines from one subnet; the first host address is the gateway's."""

    def __init__(self, cidr: str = DEFAULT_CIDR) -> None:
        try:
            self.network = ipaddress.ip_network(cidr)
        except ValueError as exc:
            raise ValueError(f"not a CIDR subnet: {cidr!r} ({exc})") from exc

    @property
    def capacity(self) -> int:
        """How many machine addresses the pool has in all."""
        return max(0, self._host_count() - 1)

    def _host_count(self) -> int:
        total = self.network.num_addresses
        # Network and broadcast addresses are not hosts, except in /31, /32 (and IPv6 peers).
        return total - 2 if total > 2 else total

    def allocate(self, count: int, in_use: Collection[str]) -> list[str]:
        """The ``count`` lowest free addresses; raises :class:`IpPoolExhausted` if too few.

        With :class:`AddressesInUse` the scan resumes where the previous one found its first
        free address: a thousand clusters allocated in one pass no longer scan the pool from
        the start each (quadratic in the machines)."""
        # Membership is checked on the strings as given: converting every address in use on
        # each allocation made allocation the slowest part of a busy reconciler.
        taken = in_use if isinstance(in_use, (set, frozenset)) else set(in_use)
        free: list[str] = []
        if count <= 0:
            return free
        resume = taken.scan_from if isinstance(taken, AddressesInUse) else 1
        # Host n of the subnet; host 0 is the gateway's (after the network address, if any).
        first_host = int(self.network.network_address) + (
            1 if self.network.num_addresses > 2 else 0
        )
        for index in range(resume, self._host_count()):
            text = str(ipaddress.ip_address(first_host + index))
            if text not in taken:
                if not free and isinstance(taken, AddressesInUse):
                    taken.scan_from = index
                free.append(text)
                if len(free) == count:
                    return free
        raise IpPoolExhausted(
            f"IP pool {self.network} has {len(free)} free address(es) of {self.capacity}; "
            f"{count} requested"
        )


class AddressesInUse(set[str]):
    """Addresses taken, for a run of allocations during which none is freed (a reconciler's
    pass): every host address below ``scan_from`` is known to be taken."""

    scan_from = 1


class MachineProvider(Protocol):
    """What a cluster manager needs from bare metal; machines are values, never handles."""

    def allocate(
        self, requests: Sequence[MachineRequest], *, in_use_ips: Collection[str], now: int
    ) -> list[Machine]: ...

    def advance(self, machine: Machine, now: int) -> Machine: ...

    def changes_at(self, machine: Machine) -> int | None: ...

    def upgrade(self, machine: Machine, version: str, now: int) -> Machine: ...

    def release(self, machine: Machine, now: int) -> Machine: ...

    def redeploy(self, machine: Machine, now: int, *, automatic: bool) -> Machine: ...


@dataclass(frozen=True)
class SimulatedMachineProvider:
    """The embedded provider: machines move through the MaaS lifecycle on clock steps."""

    ip_pool: IpPool = field(default_factory=IpPool)
    faults: FaultInjection = field(default_factory=FaultInjection)
    timings: MachineTimings = field(default_factory=MachineTimings)

    def allocate(
        self, requests: Sequence[MachineRequest], *, in_use_ips: Collection[str], now: int
    ) -> list[Machine]:
        """Allocate one machine per request, all or none (IPs are the lowest not in use)."""
        ips = self.ip_pool.allocate(len(requests), in_use_ips)
        machines = []
        for request, ip in zip(requests, ips, strict=True):
            system_id = system_id_for(request.cluster, request.pool, request.index)
            fails = self.faults.fails(system_id, request.attempt)
            machines.append(
                Machine(
                    system_id=system_id,
                    hostname=hostname_for(request.cluster, request.pool, request.index),
                    cluster=request.cluster,
                    pool=request.pool,
                    index=request.index,
                    role=request.role,
                    instance_type=request.instance_type,
                    ip=ip,
                    k8s_version=request.k8s_version,
                    phase=Phase.ALLOCATED,
                    phase_started=now,
                    fails_deployment=fails,
                    attempt=request.attempt,
                )
            )
        return machines

    def advance(self, machine: Machine, now: int) -> Machine:
        """The machine as it is at step ``now``, passing through every phase due since."""
        if now < machine.phase_started:
            # The clock went back (a restart with a longer step): restart the phase rather
            # than stall until the clock catches up with the stored step.
            return replace(machine, phase_started=now)
        while (duration := self._duration(machine)) is not None:
            ends = machine.phase_started + duration
            if now < ends:
                break
            machine = self._next_phase(machine, ends)
        return machine

    def changes_at(self, machine: Machine) -> int | None:
        """The step at which :meth:`advance` next moves the machine on (None: never by itself)."""
        duration = self._duration(machine)
        return None if duration is None else machine.phase_started + duration

    def upgrade(self, machine: Machine, version: str, now: int) -> Machine:
        """Start upgrading a ready machine to ``version``; its version changes when done."""
        if machine.phase is Phase.UPGRADING and machine.target_version == version:
            return machine
        if machine.phase is not Phase.READY:
            raise MachineTransitionError(
                f"machine {machine.hostname} ({machine.system_id}) cannot be upgraded while "
                f"{machine.maas_status}/{machine.k8s_status}; it must be Deployed and Ready"
            )
        if version == machine.k8s_version:
            return machine
        return replace(machine, phase=Phase.UPGRADING, phase_started=now, target_version=version)

    def release(self, machine: Machine, now: int) -> Machine:
        """Start releasing the machine back to MaaS; releasing twice changes nothing."""
        if machine.phase in (Phase.RELEASING, Phase.RELEASED):
            return machine
        return replace(machine, phase=Phase.RELEASING, phase_started=now, target_version="")

    def redeploy(self, machine: Machine, now: int, *, automatic: bool) -> Machine:
        """Deploy a failed machine again (its address kept); ``automatic`` counts a retry, a
        redeployment the user asked for starts a fresh retry budget."""
        if not machine.is_failed:
            raise MachineTransitionError(
                f"machine {machine.hostname} ({machine.system_id}) is {machine.maas_status}; "
                "only a failed deployment is deployed again"
            )
        attempt = machine.attempt + 1
        return replace(
            machine,
            phase=Phase.ALLOCATED,
            phase_started=now,
            attempt=attempt,
            retries=machine.retries + 1 if automatic else 0,
            repair_requested=False,
            fails_deployment=self.faults.fails(machine.system_id, attempt),
            failure_reason="",
        )

    def _duration(self, machine: Machine) -> int | None:
        t = self.timings
        match machine.phase:
            case Phase.ALLOCATED:
                return t.allocate_steps
            case Phase.DEPLOYING:
                jitter = int(
                    unit_interval("deploy-jitter", machine.system_id) * (t.deploy_jitter_steps + 1)
                )
                return t.deploy_steps + jitter
            case Phase.JOINING:
                return t.join_steps
            case Phase.UPGRADING:
                return t.upgrade_steps
            case Phase.RELEASING:
                return t.release_steps
            case _:
                return None

    def _next_phase(self, machine: Machine, step: int) -> Machine:
        match machine.phase:
            case Phase.ALLOCATED:
                return replace(machine, phase=Phase.DEPLOYING, phase_started=step)
            case Phase.DEPLOYING if machine.fails_deployment:
                reason = self.faults.reason(machine.system_id)
                return replace(
                    machine,
                    phase=Phase.FAILED,
                    phase_started=step,
                    failure_reason=f"{machine.hostname}: {reason} (simulated fault)",
                )
            case Phase.DEPLOYING:
                return replace(machine, phase=Phase.JOINING, phase_started=step)
            case Phase.JOINING:
                return replace(machine, phase=Phase.READY, phase_started=step)
            case Phase.UPGRADING:
                return replace(
                    machine,
                    phase=Phase.READY,
                    phase_started=step,
                    k8s_version=machine.target_version,
                    target_version="",
                )
            case Phase.RELEASING:
                return replace(machine, phase=Phase.RELEASED, phase_started=step)
        raise AssertionError(f"phase {machine.phase} has no successor")  # pragma: no cover
