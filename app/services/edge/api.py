"""The edge controller as the server runs it: servicers, jobs and this replica's presence."""

from __future__ import annotations

from app.calls.access import AccessRules
from app.services.api import Api, ApiSystem, Job
from app.services.edge.demo import demo_job
from app.services.edge.field_rules import RULES
from app.services.edge.objects import EdgeObjects
from app.services.edge.presence import ReplicaPresence, prune_stale_job, replica_address
from app.services.edge.resource_manager import Faults, ResourceManager
from app.services.edge.service import EdgeApis
from app.settings.config import Settings
from app.sim.clock import SimClock
from app.sim.machines import FaultInjection
from app.store import ObjectStore


def edge_system(store: ObjectStore, settings: Settings) -> ApiSystem:
    """Every ``edgeproto`` servicer, the leader's jobs and this replica's heartbeat."""
    clock = SimClock(settings.sim_step_seconds)
    objects = EdgeObjects(store, clock)
    presence = ReplicaPresence(store, replica_address(settings.grpc_port))
    faults = Faults(FaultInjection(settings.sim_failure_ratio, settings.sim_seed))
    manager = ResourceManager(store, clock, controller=presence.address, faults=faults)
    jobs: list[Job] = [manager.run, prune_stale_job(store)]
    if settings.demo:
        jobs.append(demo_job(objects))
    return ApiSystem(EdgeApis(objects, presence).servicers(), jobs, [presence.run])


# The refs are the controller's own accounting, NotifyApi its sync protocol with cloudlets, and
# injecting or evicting a cloudlet's info stands in for the cloudlet itself: an admin's.
API = Api(
    "edge",
    edge_system,
    access=AccessRules(
        admin_only_services=frozenset(
            {"edgeproto.CloudletRefsApi", "edgeproto.ClusterRefsApi", "edgeproto.NotifyApi"}
        ),
        admin_only_methods=frozenset(
            {
                "edgeproto.CloudletInfoApi.InjectCloudletInfo",
                "edgeproto.CloudletInfoApi.EvictCloudletInfo",
            }
        ),
    ),
    rules=RULES,
)
