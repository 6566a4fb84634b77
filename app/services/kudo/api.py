"""The container scheduler as the server runs it: its two servicers and its background jobs."""

from __future__ import annotations

import asyncio

from app.calls.access import AccessRules
from app.services.api import Api, ApiSystem, Job
from app.services.kudo.field_rules import RULES
from app.services.kudo.health import failure_detection_job
from app.services.kudo.instances import create_instance
from app.services.kudo.records import INSTANCE, InstanceRecord
from app.services.kudo.runtime import runtime_job
from app.services.kudo.scheduling import scheduling_job
from app.services.kudo.service import InstanceService, NodeService
from app.services.kudo.simulated_nodes import simulated_nodes_job
from app.settings.config import Settings
from app.sim.clock import Clock, SimClock
from app.store import ObjectStore
from gen.scheduler import scheduler_pb2 as pb

DEMO_INSTANCES = (
    pb.Instance(
        name="demo-web",
        uri="docker://nginx:1.27",
        resource=pb.Resource(limit=pb.ResourceSummary(cpu=1, memory=256, disk=2)),
        ports=[pb.Port(source=8080, destination=80)],
        environnement=["NGINX_PORT=80"],
    ),
    pb.Instance(
        name="demo-cache",
        uri="docker://redis:7.4",
        resource=pb.Resource(limit=pb.ResourceSummary(cpu=2, memory=1024, disk=4)),
        ports=[pb.Port(source=6379, destination=6379)],
    ),
)


def demo_instances_job(store: ObjectStore, clock: Clock) -> Job:
    """A job creating the demo instances once (by name), then idling."""

    async def create_demo_instances() -> None:
        names = {InstanceRecord.from_bytes(r.data).name for r in await store.list(INSTANCE)}
        for instance in DEMO_INSTANCES:
            if instance.name not in names:
                await create_instance(store, instance, clock)
        await asyncio.Event().wait()

    return create_demo_instances


def scheduler_system(store: ObjectStore, settings: Settings) -> ApiSystem:
    """NodeService and InstanceService over ``store``, with placement, the simulated runtime,
    failure detection, simulated nodes (``sim_nodes``) and demo instances (``demo``)."""
    clock = SimClock(settings.sim_step_seconds)
    grace = settings.node_grace_seconds
    pool = settings.node_subnet_pool
    system = ApiSystem(
        servicers=[NodeService(store, clock, pool, grace), InstanceService(store, clock)],
        jobs=[
            scheduling_job(store, clock),
            runtime_job(store, clock),
            failure_detection_job(store, grace, clock),
        ],
    )
    if settings.sim_nodes > 0:
        system.jobs.append(simulated_nodes_job(store, settings.sim_nodes, pool, grace, clock))
    if settings.demo:
        system.jobs.append(demo_instances_job(store, clock))
    return system


# A node account (a node agent) may call NodeService, which lets it act only for the node named
# like it.
API = Api(
    "kudo",
    scheduler_system,
    access=AccessRules(node_services=frozenset({"scheduler.NodeService"})),
    rules=RULES,
)
