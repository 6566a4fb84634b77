"""Operations in flight on Cloudlets, ClusterInsts and AppInsts, and how callers follow them.

An accepted Create/Update/Delete writes, in the same transaction as the object, a progress
record (``edge.progress``, a Struct): the action, the tracked state, the clock step the current
work step began and how many it takes, the CRM override the request carried, the revision it
was accepted at (the seed of its simulated fault draw), the index of the work step and its
message. Whoever carries the operation
out (the simulated CRM, or an external CRM's reports) moves the record on; when it ends, the
record is written once more with its outcome (``done`` or ``failed`` with the errors) and
deleted in the same transaction, so a follower always reads how it ended.

A follower (:func:`follow`) streams one ``Result`` per message. A failed operation ends its
stream with a ``Result`` whose ``code`` is :data:`FAILURE_CODE` (the gRPC code UNKNOWN, which is
what the original controller's plain errors became on the wire) and then that error status.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field, replace
from typing import Any

import grpc
from google.protobuf import json_format, struct_pb2
from google.protobuf.message import Message

import app.services.edge.kinds as k
from app.services.edge.records import PROGRESS, progress_key
from app.services.status import Rejected
from app.store import EventType, ObjectStore, Reader, Writer
from gen.edgeproto import common_pb2, result_pb2

TS = common_pb2.TrackedState
CREATE, UPDATE, DELETE = "create", "update", "delete"
# (requested, working, success, error) state of each action.
STATES: dict[str, tuple[int, int, int, int]] = {
    CREATE: (TS.CREATE_REQUESTED, TS.CREATING, TS.READY, TS.CREATE_ERROR),
    UPDATE: (TS.UPDATE_REQUESTED, TS.UPDATING, TS.READY, TS.UPDATE_ERROR),
    DELETE: (TS.DELETE_REQUESTED, TS.DELETING, TS.NOT_PRESENT, TS.DELETE_ERROR),
}
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
VERB = {CREATE: "Create", UPDATE: "Update", DELETE: "Delete"}
DONE, FAILED = "done", "failed"
FAILURE_CODE = grpc.StatusCode.UNKNOWN
CO = common_pb2.CRMOverride


def ignores_errors(override: int) -> bool:
    """IGNORE_CRM_ERRORS: a failure the CRM reports counts as success."""
    return override == CO.IGNORE_CRM_ERRORS


def ignores_crm(override: int) -> bool:
    """IGNORE_CRM / IGNORE_CRM_AND_TRANSIENT_STATE: the CRM is not asked at all."""
    return override in (CO.IGNORE_CRM, CO.IGNORE_CRM_AND_TRANSIENT_STATE)


def ignores_transient(override: int) -> bool:
    """IGNORE_TRANSIENT_STATE / IGNORE_CRM_AND_TRANSIENT_STATE: act on a busy object."""
    return override in (CO.IGNORE_TRANSIENT_STATE, CO.IGNORE_CRM_AND_TRANSIENT_STATE)


@dataclass(frozen=True)
class Progress:
    """An operation in flight on one tracked object."""

    type_name: str
    key: str  # the object's store key
    action: str
    state: int
    since: int  # the clock step the current work step began
    salt: int = 0  # the revision the operation was accepted at
    override: int = 0
    step: int = 0
    message: str = ""
    outcome: str = ""
    errors: tuple[str, ...] = field(default=())
    wait: int = 1  # clock steps the current work step takes

    @property
    def kind(self) -> k.EdgeType:
        return k.BY_NAME[self.type_name]

    @property
    def record_key(self) -> str:
        return f"{self.type_name}/{self.key}"

    def key_message(self) -> Any:
        key = type(self.kind.key_of(self.kind.message()))()
        json_format.Parse(self.key, key)
        return key

    def moved(self, state: int, message: str, now: int, wait: int = 1) -> Progress:
        """This operation one work step further."""
        return replace(self, state=state, message=message, step=self.step + 1, since=now, wait=wait)

    def to_struct(self) -> struct_pb2.Struct:
        struct = struct_pb2.Struct()
        struct.update(
            {
                "type": self.type_name,
                "key": self.key,
                "action": self.action,
                "state": TS.Name(self.state),
                "since": self.since,
                "salt": self.salt,
                "override": self.override,
                "step": self.step,
                "message": self.message,
                "outcome": self.outcome,
                "errors": list(self.errors),
                "wait": self.wait,
            }
        )
        return struct

    @classmethod
    def from_bytes(cls, data: bytes) -> Progress:
        # Records written before a field existed lack it: its default applies.
        s: dict[str, Any] = json_format.MessageToDict(struct_pb2.Struct.FromString(data))
        state = TS.Value(s["state"])
        return cls(
            s["type"],
            s["key"],
            s["action"],
            state,
            int(s["since"]),
            int(s.get("salt", 0)),
            int(s.get("override", 0)),
            int(s.get("step", 0)),
            s.get("message", MESSAGES.get(state, "")),
            s.get("outcome", ""),
            tuple(s.get("errors", ())),
            int(s.get("wait", 1)),
        )

    def failure(self) -> str:
        """``Create ClusterInst failed: ...``: how a failed operation is reported."""
        return f"{VERB[self.action]} {self.type_name} failed: {'; '.join(self.errors)}"


async def current(reader: Reader, kind: k.EdgeType, obj: Message) -> Progress | None:
    """The operation in flight on ``obj``, if any."""
    record = await reader.get(PROGRESS, progress_key(kind, obj))
    return None if record is None else Progress.from_bytes(record.data)


async def record(tx: Writer, progress: Progress) -> Progress:
    """Store ``progress`` (creating its record if new)."""
    if await tx.get(PROGRESS, progress.record_key) is None:
        await tx.create(PROGRESS, progress.record_key, progress.to_struct())
    else:
        await tx.update(PROGRESS, progress.record_key, progress.to_struct())
    return progress


async def conclude(tx: Writer, progress: Progress) -> None:
    """Write how the operation ended, then remove its record (followers read the last data)."""
    await record(tx, progress)
    await tx.delete(PROGRESS, progress.record_key)


def _results(progress: Progress) -> list[result_pb2.Result]:
    if progress.outcome == FAILED:
        return [result_pb2.Result(message=progress.failure(), code=FAILURE_CODE.value[0])]
    return [result_pb2.Result(message=progress.message)] if progress.message else []


async def follow(
    store: ObjectStore, progress: Progress, since_revision: int
) -> AsyncGenerator[result_pb2.Result]:
    """The operation's progress as Results, until it is done; a failure ends in its error."""
    for result in _results(progress):
        yield result
    last = progress.step
    if progress.outcome:
        _raise_failure(progress)
        return
    async with contextlib.aclosing(store.watch(PROGRESS, since_revision)) as events:
        async for event in events:
            if event.key != progress.record_key:
                continue
            seen = Progress.from_bytes(event.data)
            if overtaken(progress, seen):
                result, status = _aborted(progress, seen)
                yield result
                raise status
            if seen.step != last:
                last = seen.step
                for result in _results(seen):
                    yield result
            if seen.outcome or event.type is EventType.DELETED:
                _raise_failure(seen)
                return


def overtaken(followed: Progress, seen: Progress) -> bool:
    """Whether ``seen`` is another kind of operation on the object (an IGNORE_TRANSIENT_STATE
    delete accepted while a create or update was in flight), which ends ``followed``
    unfinished. A delete overtaken by a forced delete ends as that one does: deleted."""
    return seen.action != followed.action


def _aborted(followed: Progress, seen: Progress) -> tuple[result_pb2.Result, Rejected]:
    """How a followed operation ends when another took its object over: its stream's last
    Result and status say so (ABORTED), never a plain end that reads as success."""
    message = (
        f"{VERB[followed.action]} {followed.type_name} aborted: "
        f"{VERB[seen.action].lower()} requested while it was in progress"
    )
    code = grpc.StatusCode.ABORTED
    return result_pb2.Result(message=message, code=code.value[0]), Rejected(code, message)


def _raise_failure(progress: Progress) -> None:
    if progress.outcome == FAILED:
        raise Rejected(FAILURE_CODE, progress.failure())
