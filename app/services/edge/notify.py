"""``NotifyApi.StreamNotice``: the sync protocol between the controller and its DME/CRM peers.

Mapping onto ``Notice``:

1. The peer's first notice must be ``action: VERSION`` (``version`` >= 1). Its ``any`` may carry
   the peer's ``edgeproto.Node`` (name, type, cloudlet); without one the peer is registered as
   an ``NODE_UNKNOWN`` node named after its address. ``want_objs`` lists the object types it
   wants (``"App"`` or ``"edgeproto.App"``; empty: every desired-state type); with
   ``filter_cloudlet_key`` and a Node naming a cloudlet, only that cloudlet's Cloudlet,
   ClusterInsts and AppInsts are sent (other types unfiltered).
2. The server answers ``VERSION`` (``version`` :data:`NOTIFY_VERSION`), then one ``UPDATE`` per
   stored object (``any`` holds it), in dependency order, then ``SENDALL_END``.
3. Then every change as it commits: ``UPDATE`` for a created or updated object, ``DELETE`` with
   the last stored object for a deletion.
4. Meanwhile the peer may send ``UPDATE``/``DELETE`` notices whose ``any`` is a CloudletInfo,
   ClusterInstInfo, AppInstInfo or Node; they are stored (``notify_id`` set to the peer's id),
   or deleted. An Info is a CRM's report: it drives its object and the operation in flight on
   it (see :mod:`~app.services.edge.crm`); a peer registered as a ``NODE_CRM`` with a cloudlet
   takes over that cloudlet from the simulated CRM. Anything else is INVALID_ARGUMENT and ends
   the stream.
5. A CRM reports for its own cloudlet only: Infos come only from a peer whose Node is a
   ``NODE_CRM`` naming a cloudlet, and only for that cloudlet (its CloudletInfo, and the
   ClusterInstInfos and AppInstInfos of instances on it); anything else is PERMISSION_DENIED
   and ends the stream. An account bound to an operator organisation may be the CRM of that
   operator's cloudlets only (a developer-bound account of none), so a CRM's token cannot speak
   for another operator's cloudlet.

The sync lasts while the peer's side is open: when it half-closes (or disconnects) the stream
ends, and the peer's Node is removed. Over REST (half-duplex NDJSON) a POST of the VERSION notice
therefore answers VERSION, the objects and SENDALL_END; a WebSocket stays live.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message

import app.services.edge.kinds as k
from app.services.edge import crm, presence
from app.services.edge.records import put, remove
from app.services.edge.tenancy import Tenant
from app.services.edge.validation import check_key
from app.services.names import dns_name
from app.services.status import Rejected, Violations
from app.sim.clock import Clock
from app.store import Event, EventType, ObjectStore
from gen.edgeproto import node_pb2, notice_pb2

NOTIFY_VERSION = 1
Code = grpc.StatusCode
# What peers may report back: the observed state and themselves.
PEER_TYPES = (k.CLOUDLET_INFO, k.CLUSTER_INST_INFO, k.APP_INST_INFO, k.NODE)


def _packed(obj: Message, action: notice_pb2.NoticeAction) -> notice_pb2.Notice:
    wrapper = any_pb2.Any()
    wrapper.Pack(obj)
    return notice_pb2.Notice(action=action, any=wrapper)


def _bad(path: str, problem: str) -> Rejected:
    found = Violations()
    found.add(path, problem)
    return Rejected(Code.INVALID_ARGUMENT, f"{path}: {problem}", found.found)


def wanted_types(names: list[str]) -> tuple[k.EdgeType, ...]:
    """The types a peer asks for (every desired-state type when it names none)."""
    if not names:
        return k.DESIRED
    chosen = []
    for index, name in enumerate(names):
        kind = k.BY_NAME.get(name.removeprefix("edgeproto."))
        if kind is None:
            raise _bad(f"want_objs[{index}]", f"unknown object type {name!r}")
        chosen.append(kind)
    return tuple(kind for kind in k.ALL_TYPES if kind in chosen)


def _cloudlet_of(obj: Any) -> Message | None:
    """The cloudlet an object lives on (None for cloudlet-independent types)."""
    name = obj.DESCRIPTOR.name
    if name in ("Cloudlet", "CloudletInfo", "CloudletRefs"):
        return obj.key
    if name in ("ClusterInst", "ClusterInstInfo", "ClusterRefs"):
        return obj.key.cloudlet_key
    if name in ("AppInst", "AppInstInfo"):
        return obj.key.cluster_inst_key.cloudlet_key
    return None


def _named(cloudlet: Any) -> str:
    """``cloudlet berlin-1 of Acme Telecom``."""
    return f"cloudlet {cloudlet.name!r} of {cloudlet.operator_key.name!r}"


def _crm_cloudlet(node: node_pb2.Node) -> Message | None:
    """The cloudlet ``node`` is the CRM of, checked against the caller's binding."""
    cloudlet = node.key.cloudlet_key
    is_crm = node.key.node_type == node_pb2.NODE_CRM and not k.is_empty(cloudlet)
    tenant = Tenant.of_caller()
    if tenant.developer or (
        tenant.operator and (not is_crm or cloudlet.operator_key.name != tenant.operator)
    ):
        acts_for = tenant.developer or tenant.operator
        raise Rejected(
            Code.PERMISSION_DENIED,
            f"this account acts for {acts_for!r}: it may only be the CRM (a NODE_CRM peer) of "
            "that operator's cloudlets",
        )
    return cloudlet if is_crm else None


class NoticeSync:
    """One peer's sync session."""

    def __init__(self, store: ObjectStore, controller: str, peer: str, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.controller = controller
        self.peer = peer
        self.node = node_pb2.Node()
        # The cloudlet this peer is the CRM of (None: it may report no Info).
        self.reports_for: Message | None = None

    async def run(
        self, requests: AsyncIterator[notice_pb2.Notice]
    ) -> AsyncGenerator[notice_pb2.Notice]:
        """The server's side of the stream."""
        first = await anext(aiter(requests), None)
        if first is None:
            return
        types, cloudlet = self._hello(first)
        self.node = await presence.register_node(self.store, self.node, self.controller)
        try:
            yield notice_pb2.Notice(action=notice_pb2.VERSION, version=NOTIFY_VERSION)
            revision = await self.store.current_revision()
            for kind in types:
                for record in await self.store.list(kind.kind):
                    obj = kind.parse(record.data)
                    if self._selected(obj, cloudlet):
                        yield _packed(obj, notice_pb2.UPDATE)
            yield notice_pb2.Notice(action=notice_pb2.SENDALL_END)
            async for notice in self._follow(requests, types, cloudlet, revision):
                yield notice
        finally:
            await presence.unregister_node(self.store, self.node)

    def _hello(self, first: notice_pb2.Notice) -> tuple[tuple[k.EdgeType, ...], Message | None]:
        if first.action != notice_pb2.VERSION:
            raise _bad("action", "the first notice must be VERSION")
        if first.version < 1:
            raise _bad("version", "must be at least 1")
        types = wanted_types(list(first.want_objs))
        node = node_pb2.Node(
            key=node_pb2.NodeKey(
                name=dns_name(self.peer or "peer"), node_type=node_pb2.NODE_UNKNOWN
            )
        )
        if first.HasField("any"):
            if not first.any.Unpack(node):
                raise _bad("any", "the VERSION notice may only carry the peer's edgeproto.Node")
            found = Violations()
            check_key(k.NODE, node, found)
            if found:
                raise _bad(f"any.{found.found[0].field}", found.found[0].description)
        self.node = node
        self.reports_for = _crm_cloudlet(node)
        cloudlet = None
        if first.filter_cloudlet_key and not k.is_empty(node.key.cloudlet_key):
            cloudlet = node.key.cloudlet_key
        return types, cloudlet

    @staticmethod
    def _selected(obj: Message, cloudlet: Message | None) -> bool:
        if cloudlet is None:
            return True
        own = _cloudlet_of(obj)
        return own is None or own == cloudlet

    async def _follow(
        self,
        requests: AsyncIterator[notice_pb2.Notice],
        types: tuple[k.EdgeType, ...],
        cloudlet: Message | None,
        revision: int,
    ) -> AsyncIterator[notice_pb2.Notice]:
        by_kind = {kind.kind: kind for kind in types}
        reader = asyncio.ensure_future(self._absorb(requests))
        events = self.store.watch(tuple(by_kind), revision)
        upcoming: asyncio.Future[Event] | None = None
        try:
            while True:
                upcoming = asyncio.ensure_future(anext(events))
                await asyncio.wait({upcoming, reader}, return_when=asyncio.FIRST_COMPLETED)
                if reader.done():
                    upcoming.cancel()
                    with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                        await upcoming
                    reader.result()  # raises what the peer got wrong
                    return
                event = upcoming.result()
                obj = by_kind[event.kind].parse(event.data)
                if not self._selected(obj, cloudlet):
                    continue
                action = notice_pb2.DELETE if event.type is EventType.DELETED else notice_pb2.UPDATE
                yield _packed(obj, action)
        finally:
            # Ended while waiting (the caller went away, or a shutdown): the pending read goes
            # too, else it would fail alone once the store closes, a traceback in the log.
            for pending in (reader, upcoming):
                if pending is not None:
                    pending.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await pending
            await events.aclose()

    def _check_reports_for(self, kind: k.EdgeType, obj: Message) -> None:
        """PERMISSION_DENIED unless ``obj`` is an Info of this peer's own cloudlet."""
        about = _cloudlet_of(obj)
        if self.reports_for is None:
            raise Rejected(
                Code.PERMISSION_DENIED,
                f"a peer reports a {kind.name} only as the CRM of its cloudlet: its VERSION "
                "notice's Node must be a NODE_CRM naming the cloudlet",
            )
        if about is None or k.key_string(about) != k.key_string(self.reports_for):
            shown = "no cloudlet" if about is None else _named(about)
            raise Rejected(
                Code.PERMISSION_DENIED,
                f"this peer is the CRM of {_named(self.reports_for)}; it may not report a "
                f"{kind.name} of {shown}",
            )

    async def _absorb(self, requests: AsyncIterator[notice_pb2.Notice]) -> None:
        """Store what the peer reports, until it half-closes."""
        async for notice in requests:
            if notice.action not in (notice_pb2.UPDATE, notice_pb2.DELETE):
                raise _bad("action", "after VERSION a peer sends only UPDATE or DELETE notices")
            kind = next((t for t in PEER_TYPES if notice.any.Is(t.descriptor)), None)
            if kind is None:
                raise _bad(
                    "any",
                    f"a peer may report only {', '.join(t.name for t in PEER_TYPES)}; "
                    f"got {notice.any.type_url or 'nothing'}",
                )
            obj = kind.message()
            notice.any.Unpack(obj)
            found = Violations()
            check_key(kind, obj, found)
            if found:
                raise _bad(f"any.{found.found[0].field}", found.found[0].description)
            if kind is not k.NODE:
                self._check_reports_for(kind, obj)
            if hasattr(obj, "notify_id"):
                obj.notify_id = self.node.notify_id
            obj.ClearField(k.FIELDS_FIELD)
            gone = notice.action == notice_pb2.DELETE
            async with self.store.transaction() as tx:
                if kind is k.NODE:
                    await (remove(tx, kind, kind.key_of(obj)) if gone else put(tx, kind, obj))
                else:  # a CRM's report drives its object, as the simulated CRM's do
                    await crm.apply_report(tx, kind, obj, self.clock.now(), gone=gone)
