"""The simulated cloudlet resource manager (CRM): carries out Cloudlet, ClusterInst and AppInst
operations on the simulated clock and reports them in the ``*Info`` objects.

An accepted Create/Update/Delete writes, in the same transaction as the object, a progress
record (``edge.progress``: action, tracked state, the step that state was entered). The leader's
:meth:`ResourceManager.run` moves each record one state per :data:`PHASE_STEPS` steps::

    create  CREATE_REQUESTED -> CREATING -> READY
    update  UPDATE_REQUESTED -> UPDATING -> READY
    delete  DELETE_REQUESTED -> DELETING -> (object, info and refs removed)

writing the state into the ``*Info`` object and the object's own ``state`` field together, and
removes the record when done. Everything it needs is stored, so it resumes after a restart. A
ClusterInst waits in CREATE_REQUESTED while its Cloudlet is still being set up, an AppInst while
its ClusterInst is. CloudletInfo has a ``CloudletState`` instead: NOT_PRESENT while being
created, READY (with the simulated capacity and node flavors) once created, OFFLINE while being
deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any, TypeVar

from google.protobuf import json_format, struct_pb2
from google.protobuf.message import Message

import app.services.edge.kinds as k
from app.services.edge import capacity
from app.services.edge.records import PROGRESS, load, progress_key, put, remove
from app.sim.clock import Clock
from app.store import EventType, ObjectStore, Reader, Transaction, Writer
from gen.distributed_match_engine import appcommon_pb2
from gen.edgeproto import app_inst_pb2, cloudlet_pb2, clusterinst_pb2, common_pb2, result_pb2

PHASE_STEPS = 1
TS = common_pb2.TrackedState
T = TypeVar("T")
CREATE, UPDATE, DELETE = "create", "update", "delete"
STATES = {
    CREATE: (TS.CREATE_REQUESTED, TS.CREATING, TS.READY),
    UPDATE: (TS.UPDATE_REQUESTED, TS.UPDATING, TS.READY),
    DELETE: (TS.DELETE_REQUESTED, TS.DELETING, TS.NOT_PRESENT),
}
# Keyed by plain ints: stored progress gives states back as ints (TrackedState.Value's type).
MESSAGES: dict[int, str] = {
    TS.CREATE_REQUESTED: "Create requested",
    TS.CREATING: "Creating",
    TS.UPDATE_REQUESTED: "Update requested",
    TS.UPDATING: "Updating",
    TS.DELETE_REQUESTED: "Delete requested",
    TS.DELETING: "Deleting",
    TS.READY: "Ready",
    TS.NOT_PRESENT: "Deleted",
}
_CLOUDLET_STATE: dict[int, cloudlet_pb2.CloudletState] = {
    TS.CREATE_REQUESTED: cloudlet_pb2.CLOUDLET_STATE_NOT_PRESENT,
    TS.CREATING: cloudlet_pb2.CLOUDLET_STATE_NOT_PRESENT,
    TS.DELETE_REQUESTED: cloudlet_pb2.CLOUDLET_STATE_OFFLINE,
    TS.DELETING: cloudlet_pb2.CLOUDLET_STATE_OFFLINE,
}
_PROTOCOLS = {
    "tcp": appcommon_pb2.L_PROTO_TCP,
    "udp": appcommon_pb2.L_PROTO_UDP,
    "http": appcommon_pb2.L_PROTO_HTTP,
}
TRACKED = (k.CLOUDLET, k.CLUSTER_INST, k.APP_INST)


@dataclass(frozen=True)
class Progress:
    """An operation in flight on one tracked object."""

    type_name: str
    key: str  # the object's store key
    action: str
    state: int  # a TrackedState
    since: int  # the step ``state`` was entered

    @property
    def kind(self) -> k.EdgeType:
        return k.BY_NAME[self.type_name]

    @property
    def record_key(self) -> str:
        return f"{self.type_name}/{self.key}"

    def key_message(self) -> Message:
        obj: Any = self.kind.message()  # every edge kind has a ``key`` message
        key = type(obj.key)()
        json_format.Parse(self.key, key)
        return key

    def to_struct(self) -> struct_pb2.Struct:
        struct = struct_pb2.Struct()
        struct.update(
            {
                "type": self.type_name,
                "key": self.key,
                "action": self.action,
                "state": TS.Name(self.state),
                "since": self.since,
            }
        )
        return struct

    @classmethod
    def from_bytes(cls, data: bytes) -> Progress:
        s = struct_pb2.Struct.FromString(data)
        return cls(
            _stored(s, "type", str),
            _stored(s, "key", str),
            _stored(s, "action", str),
            TS.Value(_stored(s, "state", str)),
            int(_stored(s, "since", float)),  # a Struct's numbers are floats
        )


def _stored(struct: struct_pb2.Struct, name: str, kind: type[T]) -> T:
    value = struct[name]
    if not isinstance(value, kind):
        raise TypeError(f"stored progress has {name} {value!r}, not a {kind.__name__}")
    return value


def dns_name(*parts: str) -> str:
    """``web-1-0``: names joined and made DNS-safe (for URIs and container names)."""
    text = "-".join(p for p in parts if p)
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def mapped_ports(access_ports: str) -> list[appcommon_pb2.AppPort]:
    """The App's ``tcp:80,http:443`` as ports; the simulation maps each to the same public port."""
    ports = []
    for item in filter(None, (part.strip() for part in access_ports.split(","))):
        proto, _, port = item.partition(":")
        number = int(port)
        ports.append(
            appcommon_pb2.AppPort(
                proto=_PROTOCOLS[proto.lower()], internal_port=number, public_port=number
            )
        )
    return ports


async def current(reader: Reader, kind: k.EdgeType, obj: Message) -> Progress | None:
    """The operation in flight on ``obj``, if any."""
    record = await reader.get(PROGRESS, progress_key(kind, obj))
    return None if record is None else Progress.from_bytes(record.data)


async def begin(tx: Writer, kind: k.EdgeType, obj: Message, action: str, step: int) -> Progress:
    """Record that ``action`` on ``obj`` starts now; set its first tracked state."""
    progress = Progress(kind.name, kind.store_key(obj), action, STATES[action][0], step)
    key = progress.record_key
    if await tx.get(PROGRESS, key) is None:
        await tx.create(PROGRESS, key, progress.to_struct())
    else:
        await tx.update(PROGRESS, key, progress.to_struct())
    await _set_state(tx, kind, kind.key_of(obj), progress.state, controller="")
    return progress


async def _set_state(
    tx: Writer, kind: k.EdgeType, key: Any, state: int, *, controller: str
) -> None:
    """Write the tracked state into the info object (and the object's ``state`` field)."""
    if kind is k.CLOUDLET:
        info = await load(tx, k.CLOUDLET_INFO, key) or cloudlet_pb2.CloudletInfo(key=key)
        info.state = _CLOUDLET_STATE.get(state, cloudlet_pb2.CLOUDLET_STATE_READY)
        if state == TS.READY and not info.os_max_ram:
            sim = capacity.SIMULATED_CLOUDLET
            info.os_max_ram, info.os_max_vcores, info.os_max_vol_gb = sim.ram, sim.vcpus, sim.disk
            del info.flavors[:]
            info.flavors.extend(capacity.NODE_FLAVORS)
        if controller:
            info.controller = controller
        await put(tx, k.CLOUDLET_INFO, info)
        return
    obj = await load(tx, kind, key)
    if obj is None:
        return
    obj.state = state
    info_kind = k.INFO_OF[kind.name]
    observed: Any = await load(tx, info_kind, key) or info_kind.message(key=key)
    observed.state = state
    if kind is k.APP_INST and state == TS.READY:
        containers = [dns_name(key.app_key.name, key.app_key.version)]
        for target in (obj, observed):
            del target.runtime_info.container_ids[:]
            target.runtime_info.container_ids.extend(containers)
    await put(tx, kind, obj)
    await put(tx, info_kind, observed)


async def _finish_delete(tx: Transaction, kind: k.EdgeType, key: Message) -> None:
    """Remove a deleted object with its info, giving back what it took."""
    obj = await load(tx, kind, key)
    if kind is k.CLUSTER_INST and obj is not None:
        taken = await capacity.cluster_inst_resources(tx, obj)
        await capacity.release_on_cloudlet(tx, obj, taken)
        await remove(tx, k.CLUSTER_REFS, key)
    elif kind is k.APP_INST and obj is not None:
        taken = await capacity.flavor_resources(tx, obj.flavor)
        await capacity.release_on_cluster(tx, obj, taken)
    elif kind is k.CLOUDLET:
        await remove(tx, k.CLOUDLET_REFS, key)
    await remove(tx, kind, key)
    await remove(tx, k.INFO_OF[kind.name], key)


def _parent(progress: Progress) -> str | None:
    """The progress key of the object ``progress``'s create waits for."""
    if progress.action != CREATE:
        return None
    key = progress.key_message()
    if isinstance(key, clusterinst_pb2.ClusterInstKey):
        return f"{k.CLOUDLET.name}/{k.key_string(key.cloudlet_key)}"
    if isinstance(key, app_inst_pb2.AppInstKey):
        return f"{k.CLUSTER_INST.name}/{k.key_string(key.cluster_inst_key)}"
    return None


class ResourceManager:
    """The leader's job moving operations along on the clock."""

    def __init__(self, store: ObjectStore, clock: Clock, controller: str = "") -> None:
        self.store = store
        self.clock = clock
        self.controller = controller

    async def run(self) -> None:
        """Advance due operations, then sleep until the next is due or a new one arrives."""
        while True:
            revision = await self.store.current_revision()
            wait = await self.advance_due()
            await self._wait_for_progress(revision, wait)

    async def advance_due(self) -> float | None:
        """Move every due operation one state on; seconds until the next is due (None: idle)."""
        records = await self.store.list(PROGRESS)
        in_flight = {r.key: Progress.from_bytes(r.data) for r in records}
        now = self.clock.now()
        nearest: int | None = None
        for progress in in_flight.values():
            due = progress.since + PHASE_STEPS
            if now < due:
                nearest = due if nearest is None else min(nearest, due)
                continue
            parent = in_flight.get(_parent(progress) or "")
            if parent is not None and parent.action == CREATE:
                continue  # woken again when the parent's progress changes
            await self.advance(progress.record_key)
            nearest = now + PHASE_STEPS if nearest is None else min(nearest, now + PHASE_STEPS)
        if nearest is None:
            return None
        return max(0.0, (nearest - self.clock.now()) * self.clock.step_seconds)

    async def advance(self, record_key: str) -> None:
        """Move one operation to its next state (finishing it after the last)."""
        async with self.store.transaction() as tx:
            record = await tx.get(PROGRESS, record_key)
            if record is None:
                return
            progress = Progress.from_bytes(record.data)
            states = STATES[progress.action]
            index = states.index(progress.state) if progress.state in states else 0
            following = states[min(index + 1, len(states) - 1)]
            kind, key = progress.kind, progress.key_message()
            if following == states[-1]:
                await tx.delete(PROGRESS, record_key)
                if progress.action == DELETE:
                    await _finish_delete(tx, kind, key)
                else:
                    await _set_state(tx, kind, key, following, controller=self.controller)
                return
            moved = Progress(
                progress.type_name, progress.key, progress.action, following, self.clock.now()
            )
            await tx.update(PROGRESS, record_key, moved.to_struct())
            await _set_state(tx, kind, key, following, controller=self.controller)

    async def _wait_for_progress(self, revision: int, timeout: float | None) -> None:
        with contextlib.suppress(TimeoutError):
            async with (
                asyncio.timeout(timeout),
                contextlib.aclosing(self.store.watch(PROGRESS, revision)) as events,
            ):
                async for _ in events:
                    return


async def follow(
    store: ObjectStore, progress: Progress, since_revision: int
) -> AsyncGenerator[result_pb2.Result]:
    """The operation's progress as Results, from its current state until it is done."""
    yield result_pb2.Result(message=MESSAGES[progress.state])
    record_key = progress.record_key
    last = progress.state
    async with contextlib.aclosing(store.watch(PROGRESS, since_revision)) as events:
        async for event in events:
            if event.key != record_key:
                continue
            if event.type is EventType.DELETED:
                yield result_pb2.Result(message=MESSAGES[STATES[progress.action][-1]])
                return
            state = Progress.from_bytes(event.data).state
            if state != last:
                last = state
                yield result_pb2.Result(message=MESSAGES[state])
