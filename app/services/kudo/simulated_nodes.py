"""Simulated nodes: the embedded default runs a few nodes in-process so the scheduler has room.

They register through the same code as ``Register`` (with fixed certificates, so a restart finds
them registered already) and report through the same code as ``Status``, every quarter of the
grace period: their usage is the sum of what their running instances use at that moment
(:func:`app.services.kudo.instances.running_usage`, which varies over time). They say no
goodbye when the server stops: like real nodes, they fall silent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from app.services.kudo.certificates import read_node_certificate, simulated_certificate
from app.services.kudo.errors import SchedulerError
from app.services.kudo.instances import running_usage
from app.services.kudo.nodes import register_node, report_status
from app.services.kudo.placement import Capacity
from app.services.kudo.records import INSTANCE, UP, InstanceRecord, summary
from app.sim.clock import Clock
from app.store import ObjectStore
from gen.scheduler import scheduler_pb2 as pb

log = logging.getLogger(__name__)
SIMULATED_CAPACITY = Capacity(cpu=8, memory=16384, disk=200)


def simulated_node_name(index: int) -> str:
    return f"sim-node-{index}"


async def _usage_by_node(store: ObjectStore) -> dict[str, Capacity]:
    usage: dict[str, Capacity] = {}
    now = time.time()
    for record in await store.list(INSTANCE):
        instance = InstanceRecord.from_bytes(record.data)
        if instance.reserves and instance.status in UP:
            used = running_usage(instance.id, instance.limit, now)
            usage[instance.node] = usage.get(instance.node, Capacity()) + used
    return usage


def simulated_nodes_job(
    store: ObjectStore, count: int, pool: str, grace_seconds: float, clock: Clock
) -> Callable[[], Awaitable[None]]:
    """A job registering ``count`` simulated nodes and reporting their status on the clock."""
    every = max(grace_seconds / 4, clock.step_seconds, 0.005)

    async def run_simulated_nodes() -> None:
        names = []
        for index in range(1, count + 1):
            name = simulated_node_name(index)
            try:
                await register_node(store, read_node_certificate(simulated_certificate(name)), pool)
            except SchedulerError as exc:
                log.warning("simulated node %s not started: %s", name, exc.message)
                continue
            names.append(name)
        first = True
        # No goodbye on cancellation: a stopped server's nodes simply fall silent, like real ones.
        while True:
            usage = await _usage_by_node(store)
            for name in names:
                message = pb.NodeStatus(
                    id=name,
                    status=pb.RUNNING,
                    statusDescription="simulated node",
                    resource=pb.Resource(
                        limit=summary(SIMULATED_CAPACITY),
                        usage=summary(usage.get(name, Capacity())),
                    ),
                )
                await report_status(store, message, clock, first=first, refresh_seconds=every)
            first = False
            await asyncio.sleep(every)

    return run_simulated_nodes
