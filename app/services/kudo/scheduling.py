"""Placing pending instances: best fit over healthy nodes, whenever nodes or instances change.

Pending instances are placed oldest first, but one that fits nowhere does not block smaller ones
behind it. An instance's address is the lowest free host address of its node's subnet.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from app.services.kudo.placement import Capacity, NodeRoom, best_fit
from app.services.kudo.records import INSTANCE, NODE, InstanceRecord, NodeRecord
from app.services.kudo.subnets import SubnetPoolExhausted, address_in
from app.services.kudo.wakeup import StoreChanges
from app.sim.clock import Clock
from app.store import Conflict, ObjectStore
from gen.scheduler import scheduler_pb2 as pb


def _free_address(subnet: str, taken: set[str]) -> str | None:
    index = 1
    while True:
        try:
            address = address_in(subnet, index)
        except SubnetPoolExhausted:
            return None
        if address not in taken:
            return address
        index += 1


async def place_pending(store: ObjectStore, clock: Clock) -> int:
    """Place every SCHEDULING instance that fits somewhere now; returns how many were placed."""
    pending_ids = [
        r.key
        for r in await store.list(INSTANCE)
        if InstanceRecord.from_bytes(r.data).status == pb.SCHEDULING
    ]
    if not pending_ids:
        return 0  # the common case: no write transaction at all
    placed = 0
    async with store.transaction() as tx:
        nodes = {
            node.id: node
            for node in (NodeRecord.from_bytes(r.data) for r in await tx.list(NODE))
            if node.healthy
        }
        records = await tx.list(INSTANCE)
        instances = [(InstanceRecord.from_bytes(r.data), r.revision) for r in records]
        reserved = {node_id: Capacity() for node_id in nodes}
        addresses: dict[str, set[str]] = {node_id: set() for node_id in nodes}
        for instance, _ in instances:
            if instance.reserves and instance.node in nodes:
                reserved[instance.node] = reserved[instance.node] + instance.limit
                addresses[instance.node].add(instance.ip)
        pending = sorted(
            (pair for pair in instances if pair[0].status == pb.SCHEDULING),
            key=lambda pair: (pair[0].created_ns, pair[0].id),
        )
        for instance, revision in pending:
            rooms = [NodeRoom(n.id, n.limit, reserved[n.id]) for n in nodes.values()]
            while rooms:
                room = best_fit(rooms, instance.limit)
                if room is None:
                    break
                node = nodes[room.name]
                ip = _free_address(node.subnet, addresses[node.id])
                if ip is None:  # the node's subnet is full: try the next best node
                    rooms = [r for r in rooms if r.name != room.name]
                    continue
                after = instance.moved(
                    pb.SCHEDULED,
                    f"placed on node {node.id!r} with address {ip}",
                    at_ns=time.time_ns(),
                    step=clock.now(),
                    node=node.id,
                    ip=ip,
                )
                await tx.update(INSTANCE, instance.id, after.to_bytes(), revision)
                reserved[node.id] = reserved[node.id] + instance.limit
                addresses[node.id].add(ip)
                placed += 1
                break
    return placed


def scheduling_job(store: ObjectStore, clock: Clock) -> Callable[[], Awaitable[None]]:
    """A job placing pending instances each time a node or an instance changes."""

    async def place_instances() -> None:
        changes = StoreChanges(store, (NODE, INSTANCE), await store.current_revision())
        async with asyncio.TaskGroup() as group:
            group.create_task(changes.follow())
            while True:
                try:
                    await place_pending(store, clock)
                except Conflict:
                    pass  # an owner's request raced the placement: look again at once
                else:
                    await changes.wait()

    return place_instances
