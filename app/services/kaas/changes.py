"""Which changes a cluster's current state allows (the servicer's conflict rules).

Pool changes are queued in the spec in every state but ``STOPPING``; an upgrade needs a cluster
that runs one version everywhere and whose control plane and workers are up (``RUNNING``,
``DEGRADED``, or ``RECONCILING`` a pool change). ``GetUpgradeClusterInformation`` and
``UpgradeCluster`` both ask :func:`upgrade_refusal`, so they always agree.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from app.services.kaas.records import ClusterState
from app.services.status import Rejected
from app.sim.machine_model import Phase
from gen.cnct.kaas.api import api_pb2


def _state_name(status: int) -> str:
    return api_pb2.ClusterStatus.Name(status)


def require_changeable(state: ClusterState, doing: str) -> None:
    """FAILED_PRECONDITION unless the cluster takes changes (every state but STOPPING)."""
    if state.status.status == api_pb2.STOPPING:
        raise Rejected(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"cannot {doing} cluster {state.name!r} while it is STOPPING (being deleted)",
        )


def upgrade_refusal(state: ClusterState) -> str | None:
    """Why the cluster cannot start an upgrade now, or None when it can."""
    status = state.status.status
    if status in (api_pb2.STOPPING, api_pb2.PROVISIONING, api_pb2.ERROR):
        why = {
            api_pb2.STOPPING: "it is being deleted",
            api_pb2.PROVISIONING: "no version runs on it yet",
            api_pb2.ERROR: "its control plane or every worker failed; repair it first",
        }[status]
        return f"cluster {state.name!r} is {_state_name(status)}: {why}"
    behind = [
        m.hostname
        for m in state.machines
        if m.phase is Phase.UPGRADING
        or (not m.is_failed and m.holds_ip and m.k8s_version != state.spec.k8s_version)
    ]
    if behind:
        return (
            f"cluster {state.name!r} is still upgrading to {state.spec.k8s_version} "
            f"({len(behind)} machine(s) to go); one version step at a time"
        )
    return None


def plain_version(version: str, versions: Sequence[str]) -> str:
    """``version`` without the ``v`` prefix when that names an offered version."""
    if version.startswith("v") and version[1:] in versions:
        return version[1:]
    return version
