"""The simulated container runtime: instances move through their transient states on the clock.

SCHEDULED → STARTING after 1 step (or STOPPED if the owner stopped it meanwhile), STARTING →
RUNNING after 2, STOPPING → STOPPED after 1, DESTROYING → TERMINATED after 1. The step of each
transition is stored with the instance, so a restarted leader continues where it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from app.services.kudo.instances import running_usage
from app.services.kudo.placement import Capacity
from app.services.kudo.records import INSTANCE, InstanceRecord
from app.services.kudo.wakeup import StoreChanges
from app.sim.clock import Clock
from app.store import Conflict, ObjectStore
from gen.scheduler import scheduler_pb2 as pb

STEPS = {pb.SCHEDULED: 1, pb.STARTING: 2, pb.STOPPING: 1, pb.DESTROYING: 1}


def next_state(instance: InstanceRecord) -> InstanceRecord:
    """The instance after the runtime finished its current transient state (at ``step``)."""
    at_ns = time.time_ns()
    status = instance.status
    if status == pb.SCHEDULED and instance.wants_running:
        return instance.moved(
            pb.STARTING,
            f"pulling image {instance.uri} and starting container {instance.name!r}",
            at_ns=at_ns,
            step=instance.step + STEPS[status],
        )
    if status == pb.SCHEDULED:
        return instance.moved(
            pb.STOPPED, "placed; kept stopped as requested", at_ns=at_ns, step=instance.step + 1
        )
    if status == pb.STARTING:
        ports = ", ".join(f"{s}->{d}" for s, d in instance.ports) or "none"
        return instance.moved(
            pb.RUNNING,
            f"container running at {instance.ip}; ports {ports}",
            at_ns=at_ns,
            step=instance.step + STEPS[status],
            usage=running_usage(instance.id, instance.limit, at_ns / 1e9),
        )
    if status == pb.STOPPING:
        return instance.moved(
            pb.STOPPED,
            "container exited with code 0",
            at_ns=at_ns,
            step=instance.step + STEPS[status],
            usage=Capacity(),
        )
    return instance.moved(
        pb.TERMINATED,
        "container removed; its resources are released",
        at_ns=at_ns,
        step=instance.step + STEPS[status],
        usage=Capacity(),
    )


async def advance_instances(store: ObjectStore, clock: Clock) -> int | None:
    """Finish every transient state whose time has come; returns the next step something is due."""
    due_next: int | None = None
    moving: list[tuple[InstanceRecord, int]] = []
    for record in await store.list(INSTANCE):
        instance = InstanceRecord.from_bytes(record.data)
        if instance.status not in STEPS:
            continue
        due = instance.step + STEPS[instance.status]
        if clock.now() < due:
            due_next = due if due_next is None else min(due_next, due)
            continue
        moving.append((instance, record.revision))
    if moving:
        # One transaction per step: one commit instead of one per instance, and watchers learn
        # of the step's moves in one wake-up.
        async with store.transaction() as tx:
            for instance, revision in moving:
                # On a conflict an owner's request came first; its write wakes us again.
                with contextlib.suppress(Conflict):
                    moved = next_state(instance).to_bytes()
                    await tx.update(INSTANCE, instance.id, moved, revision)
    return due_next


def runtime_job(store: ObjectStore, clock: Clock) -> Callable[[], Awaitable[None]]:
    """A job running the simulated runtime: wakes on instance changes and when a step is due."""

    async def run_containers() -> None:
        changes = StoreChanges(store, (INSTANCE,), await store.current_revision())
        async with asyncio.TaskGroup() as group:
            group.create_task(changes.follow())
            while True:
                due = await advance_instances(store, clock)
                if due is None:
                    await changes.wait()
                else:
                    wait = clock.time_of(due).timestamp() - time.time()
                    await changes.wait(max(wait, 0.0))

    return run_containers
