"""Who is connected: the running Portico replicas (Controllers) and the peers on NotifyApi (Nodes).

Every process registers itself as a Controller (``ControllerKey.addr`` is
``<hostname>:<gRPC port>/<pid>``, unique among workers sharing a port) and renews a lease
(``edge.controller_lease``, a Timestamp) every :data:`HEARTBEAT_SECONDS`. A Controller whose
lease is older than :data:`STALE_AFTER_SECONDS` is not shown, and the leader's
:func:`prune_stale_job` deletes it with the Nodes that were connected through it. Each Node is
stored with the Controller it is connected to (``edge.node_controller``), so ShowNodeLocal can
list only this replica's peers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from google.protobuf import timestamp_pb2
from google.protobuf.message import Message

import app.services.edge.kinds as k
from app.services.edge.records import CONTROLLER_LEASE, NODE_CONTROLLER, put
from app.store import NotFound, ObjectStore, Reader, StoreError, Writer
from gen.edgeproto import controller_pb2, node_pb2

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 5.0
STALE_AFTER_SECONDS = 3 * HEARTBEAT_SECONDS


def replica_address(grpc_port: int) -> str:
    """This process's controller address."""
    return f"{socket.gethostname()}:{grpc_port}/{os.getpid()}"


def _lease_now() -> timestamp_pb2.Timestamp:
    lease = timestamp_pb2.Timestamp()
    lease.FromDatetime(datetime.now(UTC))
    return lease


def _is_fresh(data: bytes, now: datetime) -> bool:
    at = timestamp_pb2.Timestamp.FromString(data).ToDatetime(tzinfo=UTC)
    return now - at <= timedelta(seconds=STALE_AFTER_SECONDS)


async def live_controllers(reader: Reader) -> set[str]:
    """Addresses of the replicas whose lease is fresh."""
    now = datetime.now(UTC)
    return {r.key for r in await reader.list(CONTROLLER_LEASE) if _is_fresh(r.data, now)}


class ReplicaPresence:
    """This process's Controller registration and heartbeat (runs on every replica)."""

    def __init__(self, store: ObjectStore, address: str) -> None:
        self.store = store
        self.address = address
        self.registered = asyncio.Event()

    async def run(self) -> None:
        """Renew the lease every heartbeat until cancelled (every replica runs this, not only
        the leader)."""
        controller = controller_pb2.Controller(key=controller_pb2.ControllerKey(addr=self.address))
        while True:
            # The lease goes first: the leader prunes Controllers that have none, so a
            # Controller must never exist without one.
            try:
                await _upsert(self.store, CONTROLLER_LEASE, self.address, _lease_now())
                key = k.CONTROLLER.store_key(controller)
                await _upsert(self.store, k.CONTROLLER.kind, key, controller)
                self.registered.set()
            except StoreError as error:  # retried at the next heartbeat
                log.warning("controller heartbeat not written: %s", error)
            await asyncio.sleep(HEARTBEAT_SECONDS)


async def _upsert(store: ObjectStore, kind: str, key: str, data: Message) -> None:
    try:
        await store.update(kind, key, data)
    except NotFound:
        await store.create(kind, key, data)


async def _put_raw(tx: Writer, kind: str, key: str, data: Message) -> None:
    if await tx.get(kind, key) is None:
        await tx.create(kind, key, data)
    else:
        await tx.update(kind, key, data)


async def register_node(store: ObjectStore, node: node_pb2.Node, controller: str) -> node_pb2.Node:
    """Store a connected peer with a fresh ``notify_id`` (the revision it was registered at)."""
    async with store.transaction() as tx:
        await put(tx, k.NODE, node)
        stored = await tx.get(k.NODE.kind, k.NODE.store_key(node))
        assert stored is not None
        registered = node_pb2.Node()
        registered.CopyFrom(node)
        registered.notify_id = stored.revision
        await put(tx, k.NODE, registered)
        owner = controller_pb2.ControllerKey(addr=controller)
        await _put_raw(tx, NODE_CONTROLLER, k.NODE.store_key(node), owner)
    return registered


async def unregister_node(store: ObjectStore, node: node_pb2.Node) -> None:
    """Forget a peer that disconnected."""
    key = k.NODE.store_key(node)
    async with store.transaction() as tx:
        for kind in (k.NODE.kind, NODE_CONTROLLER):
            if await tx.get(kind, key) is not None:
                await tx.delete(kind, key)


async def node_controllers(reader: Reader) -> dict[str, str]:
    """The controller address of every stored node, by node store key."""
    return {
        r.key: controller_pb2.ControllerKey.FromString(r.data).addr
        for r in await reader.list(NODE_CONTROLLER)
    }


def prune_stale_job(store: ObjectStore) -> Callable[[], Awaitable[None]]:
    """A leader job removing Controllers whose lease expired, and their Nodes."""

    async def prune_stale_controllers() -> None:
        while True:
            await prune_stale(store)
            await asyncio.sleep(HEARTBEAT_SECONDS)

    return prune_stale_controllers


async def prune_stale(store: ObjectStore) -> int:
    """Remove stale Controllers (and Nodes connected through them); how many went."""
    now = datetime.now(UTC)
    async with store.transaction() as tx:
        leases = {r.key: r.data for r in await tx.list(CONTROLLER_LEASE)}
        stale = {addr for addr, data in leases.items() if not _is_fresh(data, now)}
        for record in await tx.list(k.CONTROLLER.kind):
            addr = k.CONTROLLER.parse(record.data).key.addr
            if addr not in leases:
                stale.add(addr)
        for addr in stale:
            key = k.key_string(controller_pb2.ControllerKey(addr=addr))
            if await tx.get(k.CONTROLLER.kind, key) is not None:
                await tx.delete(k.CONTROLLER.kind, key)
            if addr in leases:
                await tx.delete(CONTROLLER_LEASE, addr)
        for node_key, addr in (await node_controllers(tx)).items():
            if addr in stale:
                await tx.delete(NODE_CONTROLLER, node_key)
                if await tx.get(k.NODE.kind, node_key) is not None:
                    await tx.delete(k.NODE.kind, node_key)
    return len(stale)
