"""Instances in the store: creation, the owner's Start/Stop/Destroy requests, and following one.

``Create`` only records the instance as SCHEDULING; placement is the scheduling job's work (one
placer on the leader, so two placements can never over-commit a node).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator

import grpc

from app.services.kudo.errors import SchedulerError
from app.services.kudo.lifecycle import IllegalTransition, after_request, is_repeat
from app.services.kudo.placement import Capacity
from app.services.kudo.records import FINAL, INSTANCE, InstanceRecord, capacity_of
from app.sim.clock import Clock
from app.sim.usage import usage_at
from app.store import AlreadyExists, Conflict, EventType, NotFound, ObjectStore
from gen.scheduler import scheduler_pb2 as pb

ATTEMPTS = 5

_REQUESTED = {
    "start": "start requested",
    "stop": "stop requested",
    "destroy": "destroy requested",
}


def describe_need(limit: Capacity) -> str:
    return f"cpu={limit.cpu} memory={limit.memory} disk={limit.disk}"


async def create_instance(
    store: ObjectStore, message: pb.Instance, clock: Clock
) -> tuple[InstanceRecord, int]:
    """Record a new (validated) instance as SCHEDULING; returns it and its revision.

    The client's id is kept when it chose one (AlreadyExists if it is taken), else a UUID.
    """
    limit = capacity_of(message.resource.limit)
    now = time.time_ns()
    record = InstanceRecord(
        id=message.id or str(uuid.uuid4()),
        name=message.name,
        uri=message.uri,
        environment=tuple(message.environnement),
        ports=tuple((p.source, p.destination) for p in message.ports),
        limit=limit,
        created_ns=now,
    ).moved(
        pb.SCHEDULING,
        f"accepted; waiting for a node with room for {describe_need(limit)}",
        at_ns=now,
        step=clock.now(),
    )
    try:
        stored = await store.create(INSTANCE, record.id, record.to_bytes())
    except AlreadyExists as exc:
        raise AlreadyExists(f"instance {record.id!r} already exists; choose another id") from exc
    return record, stored.revision


async def get_instance(store: ObjectStore, instance_id: str) -> tuple[InstanceRecord, int]:
    """The instance and its revision; NotFound if unknown."""
    record = await store.get(INSTANCE, instance_id)
    if record is None:
        raise NotFound(f"instance {instance_id!r} not found")
    return InstanceRecord.from_bytes(record.data), record.revision


async def request_transition(
    store: ObjectStore, instance_id: str, request: str, clock: Clock
) -> InstanceRecord:
    """Apply ``start``/``stop``/``destroy``; FAILED_PRECONDITION names the state that forbids it.

    A repeat of a request that already took effect returns the instance unchanged.
    """
    for _ in range(ATTEMPTS):
        instance, revision = await get_instance(store, instance_id)
        if is_repeat(instance.status, request):
            return instance
        try:
            target = after_request(instance.status, request)
        except IllegalTransition as exc:
            raise SchedulerError(grpc.StatusCode.FAILED_PRECONDITION, str(exc)) from exc
        changes: dict[str, object] = {}
        if request != "destroy":
            changes["wants_running"] = request == "start"
        after = instance.moved(
            target, _REQUESTED[request], at_ns=time.time_ns(), step=clock.now(), **changes
        )
        try:
            await store.update(INSTANCE, instance_id, after.to_bytes(), revision)
            return after
        except Conflict:
            continue  # the runtime moved it meanwhile: decide again from its new state
    raise SchedulerError(grpc.StatusCode.ABORTED, f"instance {instance_id!r} kept changing; retry")


async def follow_instance(
    store: ObjectStore, instance_id: str, since_revision: int
) -> AsyncIterator[InstanceRecord]:
    """The instance after every write past ``since_revision``, until it reaches a final state."""
    async with contextlib.aclosing(store.watch(INSTANCE, since_revision)) as events:
        async for event in events:
            if event.key != instance_id or event.type is EventType.DELETED:
                continue
            instance = InstanceRecord.from_bytes(event.data)
            yield instance
            if instance.status in FINAL:
                return


def running_usage(instance_id: str, limit: Capacity, at_seconds: float | None = None) -> Capacity:
    """What a running instance uses in the simulation at ``at_seconds`` (default: now): a
    seeded share of its limits that changes over time (:mod:`app.sim.usage`)."""
    when = time.time() if at_seconds is None else at_seconds
    return Capacity(*usage_at(instance_id, (limit.cpu, limit.memory, limit.disk), when))
