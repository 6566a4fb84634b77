"""The edge controller as the server runs it: servicers, jobs and this replica's presence."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from app.services.edge.demo import demo_job
from app.services.edge.objects import EdgeObjects
from app.services.edge.presence import ReplicaPresence, prune_stale_job, replica_address
from app.services.edge.resource_manager import Faults, ResourceManager
from app.services.edge.service import EdgeApis
from app.settings.config import Settings
from app.sim.clock import SimClock
from app.sim.machines import FaultInjection
from app.store import ObjectStore

Job = Callable[[], Awaitable[None]]


@dataclass
class EdgeSystem:
    """What :func:`edge_system` builds."""

    servicers: dict[str, object] = field(default_factory=dict)
    jobs: list[Job] = field(default_factory=list)  # on the leader only
    replica_jobs: list[Job] = field(default_factory=list)  # on every replica


def edge_system(store: ObjectStore, settings: Settings) -> EdgeSystem:
    """Every ``edgeproto`` servicer, the leader's jobs and this replica's heartbeat."""
    clock = SimClock(settings.sim_step_seconds)
    objects = EdgeObjects(store, clock)
    presence = ReplicaPresence(store, replica_address(settings.grpc_port))
    faults = Faults(FaultInjection(settings.sim_failure_ratio, settings.sim_seed))
    manager = ResourceManager(store, clock, controller=presence.address, faults=faults)
    jobs: list[Job] = [manager.run, prune_stale_job(store)]
    if settings.demo:
        jobs.append(demo_job(objects))
    return EdgeSystem(EdgeApis(objects, presence).servicers(), jobs, [presence.run])
