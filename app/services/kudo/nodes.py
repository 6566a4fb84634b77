"""Nodes in the store: registration, status reports, failure after silence, and leaving.

A node that is lost (failed or unregistered) gives up its instances: those being destroyed are
TERMINATED, those no remaining healthy node is big enough to ever hold are FAILED, and the rest go
back to SCHEDULING (keeping whether their owner wants them running) to be placed again by best fit.
"""

from __future__ import annotations

import dataclasses
import time

import grpc

from app.services.kudo.certificates import NodeCertificate
from app.services.kudo.errors import SchedulerError
from app.services.kudo.placement import Capacity
from app.services.kudo.records import (
    FINAL,
    INSTANCE,
    NODE,
    SUBNET,
    InstanceRecord,
    NodeRecord,
    capacity_of,
)
from app.services.kudo.subnets import SubnetPoolExhausted, allocate_subnet
from app.services.status import Violations
from app.sim.clock import Clock
from app.store import AlreadyExists, Conflict, NotFound, ObjectStore, Transaction
from gen.scheduler import scheduler_pb2 as pb

ATTEMPTS = 5  # retries of a write that lost an optimistic-concurrency race
# A stream that is open but silent this many grace periods counts as ended (its server died).
SILENT_STREAM_FACTOR = 4


async def register_node(
    store: ObjectStore, certificate: NodeCertificate, pool: str
) -> tuple[NodeRecord, str]:
    """Register the node a certificate names; the same certificate again changes nothing."""
    node_id = certificate.node_id
    for _ in range(ATTEMPTS):
        try:
            async with store.transaction() as tx:
                existing = await tx.get(NODE, node_id)
                if existing is not None:
                    node = NodeRecord.from_bytes(existing.data)
                    if node.fingerprint != certificate.fingerprint:
                        raise SchedulerError(
                            grpc.StatusCode.ALREADY_EXISTS,
                            f"node {node_id!r} is registered with another certificate; "
                            "unregister it first",
                        )
                    return (
                        node,
                        f"node {node_id!r} was already registered with subnet {node.subnet}",
                    )
                taken = {claim.key for claim in await tx.list(SUBNET)}
                try:
                    subnet = allocate_subnet(pool, taken)
                except SubnetPoolExhausted as exc:
                    raise SchedulerError(
                        grpc.StatusCode.RESOURCE_EXHAUSTED,
                        f"cannot register node {node_id!r}: {exc}",
                    ) from exc
                now = time.time()
                node = NodeRecord(node_id, certificate.fingerprint, subnet, now, reported_at=now)
                await tx.create(SUBNET, subnet, node_id.encode())
                await tx.create(NODE, node_id, node.to_bytes())
            return node, f"node {node_id!r} registered with subnet {subnet}"
        except AlreadyExists:
            continue  # a concurrent registration took the subnet or the id: look again
    raise SchedulerError(grpc.StatusCode.ABORTED, f"registration of {node_id!r} kept racing; retry")


def status_violations(message: pb.NodeStatus) -> Violations:
    """What is wrong with one ``NodeStatus`` report."""
    found = Violations()
    found.check(bool(message.id), "id", "is required (the node id, its certificate's CN)")
    found.check(message.status in pb.Status.values(), "status", f"unknown status {message.status}")
    for part in ("limit", "usage"):
        for dimension in ("cpu", "memory", "disk"):
            value = getattr(getattr(message.resource, part), dimension)
            found.check(
                value >= 0, f"resource.{part}.{dimension}", f"must not be negative (got {value})"
            )
    return found


def _same_report(a: NodeRecord, b: NodeRecord) -> bool:
    return dataclasses.replace(a, reported_at=0.0) == dataclasses.replace(b, reported_at=0.0)


async def report_status(
    store: ObjectStore,
    message: pb.NodeStatus,
    clock: Clock,
    *,
    first: bool,
    refresh_seconds: float,
) -> NodeRecord:
    """Keep ``message`` as the node's latest status; unchanged reports are written only every
    ``refresh_seconds``, so a chatty node does not flood the event log."""
    now = time.time()
    for _ in range(ATTEMPTS):
        record = await store.get(NODE, message.id)
        if record is None:
            raise SchedulerError(
                grpc.StatusCode.NOT_FOUND, f"node {message.id!r} is not registered; Register first"
            )
        node = NodeRecord.from_bytes(record.data)
        reported = dataclasses.replace(
            node,
            status=message.status,
            description=message.statusDescription or f"reported {pb.Status.Name(message.status)}",
            limit=capacity_of(message.resource.limit),
            usage=capacity_of(message.resource.usage),
            reported_at=now,
            streaming=True,
        )
        if not first and _same_report(node, reported) and now - node.reported_at < refresh_seconds:
            return node
        try:
            if message.status == pb.FAILED and node.status != pb.FAILED:
                async with store.transaction() as tx:
                    await tx.update(NODE, node.id, reported.to_bytes(), record.revision)
                    await evacuate(tx, node.id, f"node {node.id!r} reported FAILED", clock)
            else:
                await store.update(NODE, node.id, reported.to_bytes(), record.revision)
            return reported
        except Conflict:
            continue
    raise SchedulerError(grpc.StatusCode.ABORTED, f"status of node {message.id!r} kept racing")


async def end_status_stream(store: ObjectStore, node_id: str, last_report: float) -> None:
    """Note that the node's Status stream ended; the grace period runs from ``last_report``."""
    for _ in range(ATTEMPTS):
        record = await store.get(NODE, node_id)
        if record is None:
            return  # unregistered meanwhile
        node = NodeRecord.from_bytes(record.data)
        ended = dataclasses.replace(node, streaming=False, reported_at=last_report)
        try:
            await store.update(NODE, node_id, ended.to_bytes(), record.revision)
            return
        except Conflict:
            continue


def is_silent(node: NodeRecord, grace: float, now: float) -> bool:
    """Whether the node should be declared FAILED: stream ended and no report for ``grace``."""
    if node.status == pb.FAILED:
        return False
    quiet = now - node.reported_at
    return quiet > grace and (not node.streaming or quiet > grace * SILENT_STREAM_FACTOR)


async def fail_silent_nodes(store: ObjectStore, grace: float, clock: Clock) -> list[str]:
    """Mark FAILED every node silent past the grace period and reschedule its instances."""
    failed = []
    for record in await store.list(NODE):
        now = time.time()
        if not is_silent(NodeRecord.from_bytes(record.data), grace, now):
            continue
        try:
            async with store.transaction() as tx:
                current = await tx.get(NODE, record.key)
                if current is None:
                    continue
                node = NodeRecord.from_bytes(current.data)
                if not is_silent(node, grace, now):
                    continue
                quiet = now - node.reported_at
                reason = f"node {node.id!r} failed: no status report for {quiet:.1f} s"
                down = dataclasses.replace(node, status=pb.FAILED, description=reason)
                await tx.update(NODE, node.id, down.to_bytes(), current.revision)
                await evacuate(tx, node.id, reason, clock)
            failed.append(record.key)
        except Conflict:
            continue  # the node reported meanwhile: look again on the next round
    return failed


async def unregister_node(store: ObjectStore, node_id: str, clock: Clock) -> str:
    """Remove a node, free its subnet and reschedule its instances; says what happened."""
    async with store.transaction() as tx:
        record = await tx.get(NODE, node_id)
        if record is None:
            raise NotFound(f"node {node_id!r} is not registered")
        node = NodeRecord.from_bytes(record.data)
        await tx.delete(NODE, node_id)
        if await tx.get(SUBNET, node.subnet) is not None:
            await tx.delete(SUBNET, node.subnet)
        moved, failed, ended = await evacuate(tx, node_id, f"node {node_id!r} left", clock)
    return (
        f"node {node_id!r} unregistered and subnet {node.subnet} released; instances: "
        f"{moved} rescheduled, {failed} failed, {ended} terminated"
    )


async def evacuate(
    tx: Transaction, node_id: str, reason: str, clock: Clock
) -> tuple[int, int, int]:
    """Take every instance off a lost node; returns (rescheduled, failed, terminated)."""
    others = [
        node
        for node in (NodeRecord.from_bytes(r.data) for r in await tx.list(NODE))
        if node.id != node_id and node.healthy
    ]
    counts = [0, 0, 0]
    at_ns, step = time.time_ns(), clock.now()
    for record in await tx.list(INSTANCE):
        instance = InstanceRecord.from_bytes(record.data)
        if instance.node != node_id or instance.status in FINAL:
            continue
        if instance.status == pb.DESTROYING:
            after = instance.moved(
                pb.TERMINATED, f"{reason}; removed", at_ns=at_ns, step=step, usage=Capacity()
            )
            counts[2] += 1
        elif not any(node.limit.fits(instance.limit) for node in others):
            after = instance.moved(
                pb.FAILED,
                f"{reason}; no other healthy node is big enough to hold it",
                at_ns=at_ns,
                step=step,
                usage=Capacity(),
            )
            counts[1] += 1
        else:
            after = instance.moved(
                pb.SCHEDULING,
                f"{reason}; rescheduling",
                at_ns=at_ns,
                step=step,
                node="",
                ip="",
                usage=Capacity(),
            )
            counts[0] += 1
        await tx.update(INSTANCE, instance.id, after.to_bytes(), record.revision)
    return counts[0], counts[1], counts[2]
