"""What a bare-metal machine is: its role, its lifecycle phase with the MaaS and Kubernetes
statuses that follow from it, and the plain, persistable :class:`Machine` record.

How machines move through their phases is the provider's job (:mod:`app.sim.machines`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

from app.sim.seeded import digest

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


class Role(StrEnum):
    """The Kubernetes role a machine is deployed for."""

    CONTROL_PLANE = "control-plane"
    WORKER = "worker"


class Phase(StrEnum):
    """Where a machine is in its lifecycle; MaaS and Kubernetes statuses derive from it."""

    ALLOCATED = "allocated"
    DEPLOYING = "deploying"
    JOINING = "joining"
    READY = "ready"
    UPGRADING = "upgrading"
    FAILED = "failed"
    RELEASING = "releasing"
    RELEASED = "released"


# MaaS's own status names; "Released" stands for MaaS's "Ready" (back in the free pool),
# which would read as a Kubernetes state here.
MAAS_STATUS: Mapping[Phase, str] = {
    Phase.ALLOCATED: "Allocated",
    Phase.DEPLOYING: "Deploying",
    Phase.JOINING: "Deployed",
    Phase.READY: "Deployed",
    Phase.UPGRADING: "Deployed",
    Phase.FAILED: "Failed deployment",
    Phase.RELEASING: "Releasing",
    Phase.RELEASED: "Released",
}

# kubectl's STATUS column; an upgrading node is cordoned while it is drained and upgraded.
K8S_NODE_STATUS: Mapping[Phase, str] = {
    Phase.ALLOCATED: "NotReady",
    Phase.DEPLOYING: "NotReady",
    Phase.JOINING: "NotReady",
    Phase.READY: "Ready",
    Phase.UPGRADING: "Ready,SchedulingDisabled",
    Phase.FAILED: "NotReady",
    Phase.RELEASING: "NotReady",
    Phase.RELEASED: "NotReady",
}


def system_id_for(cluster: str, pool: str, index: int) -> str:
    """The 6-character MaaS system id of a cluster's pool machine; stable across restarts."""
    number = int.from_bytes(digest("system-id", cluster, pool, index)[:8], "big")
    chars = []
    for _ in range(6):
        number, digit = divmod(number, 36)
        chars.append(_BASE36[digit])
    return "".join(chars)


def hostname_for(cluster: str, pool: str, index: int) -> str:
    """The machine's hostname, ``<cluster>-<pool>-<index>``."""
    return f"{cluster}-{pool}-{index}"


@dataclass(frozen=True)
class MachineRequest:
    """One machine a cluster wants: which pool, which slot in it, and what to deploy."""

    cluster: str
    pool: str
    index: int
    k8s_version: str
    role: Role = Role.WORKER
    instance_type: str = "standard"
    # Deployments of this slot's machines before this one: a slot released and wanted again
    # (its pool deleted and added again) deploys its machine anew, drawing its next fault.
    attempt: int = 0


@dataclass(frozen=True)
class Machine:
    """A machine as MaaS and Kubernetes see it; plain data, safe to persist and resume."""

    system_id: str
    hostname: str
    cluster: str
    pool: str
    index: int
    role: Role
    instance_type: str
    ip: str
    k8s_version: str
    phase: Phase
    # The step the current phase began; durations count from here.
    phase_started: int
    target_version: str = ""
    fails_deployment: bool = False
    failure_reason: str = ""
    # Deployments of this slot before the current one (each draws its fault anew), the
    # automatic retries since the last one the user asked for, and whether the user asked
    # (by scaling the machine's pool) for the failed machine to be deployed again.
    attempt: int = 0
    retries: int = 0
    repair_requested: bool = False

    @property
    def maas_status(self) -> str:
        """The MaaS node status (``Deployed``, ``Failed deployment``, ...)."""
        return MAAS_STATUS[self.phase]

    @property
    def k8s_status(self) -> str:
        """The Kubernetes node status (``Ready``, ``NotReady``, ...)."""
        return K8S_NODE_STATUS[self.phase]

    @property
    def is_ready(self) -> bool:
        """Deployed, joined and not being upgraded."""
        return self.phase is Phase.READY

    @property
    def is_failed(self) -> bool:
        """Deployment failed; :attr:`failure_reason` says why."""
        return self.phase is Phase.FAILED

    @property
    def holds_ip(self) -> bool:
        """Whether the machine's IP is still taken (everything but a finished release)."""
        return self.phase is not Phase.RELEASED

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        # Every field is a plain value: no deep copy (asdict) needed; the reconciler writes
        # each changed machine on every pass.
        data = {name: getattr(self, name) for name in _FIELD_NAMES}
        data["role"] = self.role.value
        data["phase"] = self.phase.value
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Machine:
        """Rebuild a machine from :meth:`to_dict` output; unknown keys are ignored."""
        values = {k: v for k, v in data.items() if k in _FIELD_NAMES}
        try:
            values["role"] = Role(values["role"])
            values["phase"] = Phase(values["phase"])
            return cls(**values)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a stored machine: {exc}") from exc


_FIELD_NAMES = tuple(f.name for f in fields(Machine))
