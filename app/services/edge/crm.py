"""What a cloudlet resource manager's (CRM's) reports do to the objects they describe.

A CRM reports the observed state of a Cloudlet, ClusterInst or AppInst as a CloudletInfo,
ClusterInstInfo or AppInstInfo. :func:`apply_report` stores the report and lets it drive the
object and the operation in flight on it:

- a working state (CREATING, DELETING, ...; OFFLINE or NOT_PRESENT for a Cloudlet being built)
  moves the operation on and shows on the object;
- READY ends a create or update, NOT_PRESENT (or the Info's deletion) ends a delete: the object
  is READY, or gone with everything it held;
- an error state (CREATE_ERROR, ...; CLOUDLET_STATE_ERRORS) fails the operation: the object
  shows the error state and the report's ``errors``, and stays until deleted or created again.
  With ``crm_override: IGNORE_CRM_ERRORS`` an error counts as success.
- a report with nothing in flight (the CRM noticed a change on its own) shows on the object.

Both kinds of CRM report through here: an external one over ``NotifyApi`` (a connected Node of
type ``NODE_CRM`` naming the cloudlet), and the built-in simulated one
(:mod:`~app.services.edge.resource_manager`) for every cloudlet without one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from google.protobuf.message import Message

import app.services.edge.kinds as k
from app.services.edge import capacity, network
from app.services.edge.progress import (
    CREATE,
    DELETE,
    DONE,
    FAILED,
    MESSAGES,
    STATES,
    TS,
    Progress,
    conclude,
    current,
    ignores_crm,
    ignores_errors,
    record,
)
from app.services.edge.records import load, put, remove
from app.store import Reader, Transaction, Writer
from gen.edgeproto import cloudlet_pb2, node_pb2

CS = cloudlet_pb2.CloudletState
TRACKED = (k.CLOUDLET, k.CLUSTER_INST, k.APP_INST)
OBJECT_OF = {info.name: k.BY_NAME[name] for name, info in k.INFO_OF.items()}
_CLOUDLET_STATE: dict[int, int] = {
    TS.CREATE_REQUESTED: CS.CLOUDLET_STATE_NOT_PRESENT,
    TS.CREATING: CS.CLOUDLET_STATE_NOT_PRESENT,
    TS.DELETE_REQUESTED: CS.CLOUDLET_STATE_OFFLINE,
    TS.DELETING: CS.CLOUDLET_STATE_OFFLINE,
    TS.CREATE_ERROR: CS.CLOUDLET_STATE_ERRORS,
    TS.UPDATE_ERROR: CS.CLOUDLET_STATE_ERRORS,
    TS.DELETE_ERROR: CS.CLOUDLET_STATE_ERRORS,
}
_ERRORS = frozenset({TS.CREATE_ERROR, TS.UPDATE_ERROR, TS.DELETE_ERROR})
WORKING, SUCCEEDED, ERRED = "working", "succeeded", "erred"


def cloudlet_state(state: int) -> int:
    """The CloudletState a CloudletInfo shows for a tracked state."""
    return _CLOUDLET_STATE.get(state, CS.CLOUDLET_STATE_READY)


def cloudlet_of_key(key: Any) -> Any:
    """The CloudletKey inside a Cloudlet, ClusterInst or AppInst key."""
    if key.DESCRIPTOR.name == "CloudletKey":
        return key
    if key.DESCRIPTOR.name == "ClusterInstKey":
        return key.cloudlet_key
    return key.cluster_inst_key.cloudlet_key


async def external_crm_cloudlets(reader: Reader) -> set[str]:
    """Store keys of the cloudlets an external CRM is connected for."""
    return {
        k.key_string(node.key.cloudlet_key)
        for node in (k.NODE.parse(r.data) for r in await reader.list(k.NODE.kind))
        if node.key.node_type == node_pb2.NODE_CRM and not k.is_empty(node.key.cloudlet_key)
    }


def failed_create(kind: k.EdgeType, obj: Any, info: Any) -> bool:
    """Whether ``obj`` is what a failed create left behind (nothing was built for it)."""
    if kind is k.CLOUDLET:
        return info is not None and info.state == CS.CLOUDLET_STATE_ERRORS and not info.os_max_ram
    return obj.state == TS.CREATE_ERROR


def _reading(kind: k.EdgeType, info: Any, gone: bool, action: str) -> tuple[str, int]:
    """What a report means for an operation ``action``: (working/succeeded/erred, state)."""
    working = STATES[action][1]
    if kind is k.CLOUDLET:
        if info.state == CS.CLOUDLET_STATE_ERRORS:
            return ERRED, STATES[action][3]
        done = gone or (
            info.state == CS.CLOUDLET_STATE_NOT_PRESENT
            if action == DELETE
            else info.state == CS.CLOUDLET_STATE_READY
        )
        return (SUCCEEDED, STATES[action][2]) if done else (WORKING, working)
    if info.state in _ERRORS:
        return ERRED, info.state
    ends = (TS.NOT_PRESENT,) if action == DELETE else (TS.READY,)
    if (gone and action == DELETE) or info.state in ends:
        return SUCCEEDED, STATES[action][2]
    transient = info.state not in (TS.READY, TS.NOT_PRESENT, TS.TRACKED_STATE_UNKNOWN)
    return WORKING, info.state if transient else working


async def apply_report(
    tx: Transaction,
    info_kind: k.EdgeType,
    info: Any,
    now: int,
    *,
    gone: bool = False,
    message: str = "",
    wait: int = 1,
) -> None:
    """Store a CRM's report and let it drive its object (``message``: the CRM's own words,
    ``wait``: the clock steps it expects the next step to take)."""
    kind = OBJECT_OF[info_kind.name]
    key = info_kind.key_of(info)
    if gone:
        await remove(tx, info_kind, key)
    else:
        await put(tx, info_kind, info)
    obj = await load(tx, kind, key)
    if obj is None:
        return
    running = await current(tx, kind, obj)
    if running is None:
        if (
            kind is not k.CLOUDLET
            and not gone
            and (obj.state, list(obj.errors))
            != (
                info.state,
                list(info.errors),
            )
        ):
            obj.state = info.state
            del obj.errors[:]
            obj.errors.extend(info.errors)
            await put(tx, kind, obj)
        return
    meaning, state = _reading(kind, info, gone, running.action)
    if meaning == ERRED and ignores_errors(running.override):
        meaning, state = SUCCEEDED, STATES[running.action][2]
    if meaning == SUCCEEDED:
        await succeed(tx, running, now, info=None if gone else info)
    elif meaning == ERRED:
        await fail(tx, running, state, list(info.errors) or ["the CRM reported an error"], now)
    elif state != running.state or message:
        moved = running.moved(state, message or MESSAGES.get(state, ""), now, wait)
        await record(tx, moved)
        await _show_state(tx, kind, key, state, [])


async def begin(
    tx: Transaction, kind: k.EdgeType, obj: Message, action: str, now: int, override: int = 0
) -> Progress:
    """Record that ``action`` on ``obj`` starts now; IGNORE_CRM overrides finish it at once."""
    requested = STATES[action][0]
    key = kind.key_of(obj)
    await _show_state(tx, kind, key, requested, [])
    progress = Progress(
        kind.name,
        kind.store_key(obj),
        action,
        requested,
        now,
        salt=tx.revision,
        override=override,
        message=MESSAGES[requested],
    )
    await record(tx, progress)
    if ignores_crm(override):
        return await succeed(tx, progress, now)
    return progress


async def succeed(
    tx: Transaction, progress: Progress, now: int, *, info: Message | None = None
) -> Progress:
    """End an operation successfully: the object is READY, or gone with what it held."""
    kind, key = progress.kind, progress.key_message()
    final = STATES[progress.action][2]
    if progress.action == DELETE:
        await finish_delete(tx, kind, key, now)
    else:
        await _show_state(tx, kind, key, final, [], info=info)
    done = replace(progress.moved(final, MESSAGES[final], now), outcome=DONE)
    await conclude(tx, done)
    return done


async def fail(tx: Writer, progress: Progress, state: int, errors: list[str], now: int) -> None:
    """End an operation in ``state`` (an error state) with ``errors`` on the object."""
    await _show_state(tx, progress.kind, progress.key_message(), state, errors)
    failed = replace(progress.moved(state, "", now), outcome=FAILED, errors=tuple(errors))
    await conclude(tx, failed)


async def _show_state(
    tx: Writer,
    kind: k.EdgeType,
    key: Message,
    state: int,
    errors: list[str],
    *,
    info: Any = None,
) -> None:
    """Write ``state`` and ``errors`` into the object (if it has them) and its Info."""
    info_kind = k.INFO_OF[kind.name]
    stored: Any = info if info is not None else await load(tx, info_kind, key)
    if stored is None:
        stored = info_kind.message(key=key)
    if kind is k.CLOUDLET:
        stored.state = cloudlet_state(state)
    else:
        stored.state = state
    if info is None:
        del stored.errors[:]
        stored.errors.extend(errors)
    await put(tx, info_kind, stored)
    if kind is k.CLOUDLET:
        return
    obj = await load(tx, kind, key)
    if obj is None:
        return
    obj.state = state
    del obj.errors[:]
    obj.errors.extend(errors)
    if kind is k.APP_INST and stored.runtime_info.container_ids:
        obj.runtime_info.CopyFrom(stored.runtime_info)
    await put(tx, kind, obj)


async def finish_delete(tx: Transaction, kind: k.EdgeType, key: Any, now: int) -> None:
    """Remove a deleted object with its info, giving back everything it took; an auto-cluster
    left without AppInsts is deleted in turn (and its auto Cluster with it)."""
    obj = await load(tx, kind, key)
    if kind is k.CLUSTER_INST and obj is not None:
        await release_cluster_inst(tx, obj)
        await remove(tx, k.CLUSTER_REFS, key)
    elif kind is k.APP_INST and obj is not None:
        await release_app_inst(tx, obj)
    elif kind is k.CLOUDLET:
        await remove(tx, k.CLOUDLET_REFS, key)
    await remove(tx, kind, key)
    await remove(tx, k.INFO_OF[kind.name], key)
    if kind is k.APP_INST:
        await _remove_unused_auto_cluster_inst(tx, key.cluster_inst_key, now)
    elif kind is k.CLUSTER_INST and obj is not None and obj.auto:
        cluster = await load(tx, k.CLUSTER, key.cluster_key)
        if (
            cluster is not None
            and cluster.auto
            and not await _used(tx, k.CLUSTER_INST, key.cluster_key, "cluster_key")
        ):
            await remove(tx, k.CLUSTER, key.cluster_key)


async def _used(tx: Reader, kind: k.EdgeType, key: Any, field: str) -> bool:
    """Whether any ``kind`` object's key has ``key`` at ``field``."""
    return any(
        getattr(kind.key_of(kind.parse(r.data)), field) == key for r in await tx.list(kind.kind)
    )


async def _remove_unused_auto_cluster_inst(tx: Transaction, key: Any, now: int) -> None:
    inst = await load(tx, k.CLUSTER_INST, key)
    if inst is None or not inst.auto or await current(tx, k.CLUSTER_INST, inst) is not None:
        return
    if await _used(tx, k.APP_INST, key, "cluster_inst_key"):
        return
    await begin(tx, k.CLUSTER_INST, inst, DELETE, now)


async def release_cluster_inst(tx: Transaction, obj: Any) -> None:
    """Give back the resources and the IP a ClusterInst took from its Cloudlet."""
    taken = await capacity.cluster_inst_resources(tx, obj)
    await capacity.release_on_cloudlet(tx, obj, taken)
    await network.release_ip(tx, obj)


async def release_app_inst(tx: Transaction, obj: Any) -> None:
    """Give back the resources an AppInst took from its ClusterInst and its root LB ports."""
    taken = await capacity.flavor_resources(tx, obj.flavor)
    await capacity.release_on_cluster(tx, obj, taken)
    await network.release_ports(tx, obj)


def creating(progress: Progress | None) -> bool:
    return progress is not None and progress.action == CREATE
