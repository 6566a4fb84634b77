"""The ``edgeproto`` servicers, built from the service descriptors.

Every ``Create*``/``Update*``/``Delete*``/``Show*`` method whose request is a keyed object is
served by the generic :class:`~app.services.edge.objects.EdgeObjects`: unary ones answer a
``Result`` ("Created", "Updated", "Deleted"); server-streaming ones (Cloudlet, ClusterInst,
AppInst) stream the resource manager's progress ("Create requested", "Creating", "Ready"; an
Update that changes nothing answers "No changes"). Show streams the matching objects. The few
other methods (injection, exec, metrics, the sync protocol, the live Controller/Node lists) are
written out below.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from types import ModuleType
from typing import Any

import grpc
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message

import app.services.edge.kinds as k
from app.services import revisions
from app.services.edge import exec as edge_exec
from app.services.edge import metrics, presence
from app.services.edge.notify import NoticeSync
from app.services.edge.objects import EdgeObjects, without_fields
from app.services.edge.progress import follow
from app.services.edge.records import load, put
from app.services.edge.references import not_found
from app.services.edge.tenancy import Tenant
from app.services.edge.validation import check_key
from app.services.status import Rejected, Violations, abort_rejected, abort_store_error
from app.store import StoreError
from gen.edgeproto import (
    app_inst_pb2,
    app_inst_pb2_grpc,
    app_pb2,
    app_pb2_grpc,
    cloudlet_pb2,
    cloudlet_pb2_grpc,
    cluster_pb2,
    cluster_pb2_grpc,
    clusterinst_pb2,
    clusterinst_pb2_grpc,
    controller_pb2,
    controller_pb2_grpc,
    developer_pb2,
    developer_pb2_grpc,
    exec_pb2,
    exec_pb2_grpc,
    flavor_pb2,
    flavor_pb2_grpc,
    node_pb2,
    node_pb2_grpc,
    notice_pb2,
    notice_pb2_grpc,
    operator_pb2,
    operator_pb2_grpc,
    refs_pb2,
    refs_pb2_grpc,
    result_pb2,
)

MODULES: tuple[tuple[ModuleType, ModuleType], ...] = (
    (developer_pb2, developer_pb2_grpc),
    (flavor_pb2, flavor_pb2_grpc),
    (cluster_pb2, cluster_pb2_grpc),
    (app_pb2, app_pb2_grpc),
    (operator_pb2, operator_pb2_grpc),
    (cloudlet_pb2, cloudlet_pb2_grpc),
    (clusterinst_pb2, clusterinst_pb2_grpc),
    (app_inst_pb2, app_inst_pb2_grpc),
    (controller_pb2, controller_pb2_grpc),
    (exec_pb2, exec_pb2_grpc),
    (node_pb2, node_pb2_grpc),
    (notice_pb2, notice_pb2_grpc),
    (refs_pb2, refs_pb2_grpc),
)
VERBS = ("Create", "Update", "Delete", "Show")
DONE = {"Create": "Created", "Update": "Updated", "Delete": "Deleted"}
REGISTRATION_WAIT_SECONDS = 2.0

Unary = Callable[[Any], Awaitable[Message]]
Streaming = Callable[[Any], AsyncGenerator[Message]]


def _unary(fn: Unary) -> Callable[..., Awaitable[Message]]:
    async def method(self: object, request: Any, context: grpc.aio.ServicerContext) -> Message:
        revisions.take_if_match(context.invocation_metadata())
        try:
            return await fn(request)
        except Rejected as rejected:
            await abort_rejected(context, rejected)
        except StoreError as error:
            await abort_store_error(context, error)

    return method


def _streaming(fn: Streaming) -> Callable[..., AsyncIterator[Message]]:
    async def method(
        self: object, request: Any, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Message]:
        revisions.take_if_match(context.invocation_metadata())
        try:
            async with contextlib.aclosing(fn(request)) as replies:
                async for reply in replies:
                    yield reply
        except Rejected as rejected:
            await abort_rejected(context, rejected)
        except StoreError as error:
            await abort_store_error(context, error)

    return method


class EdgeApis:
    """Builds one servicer per ``edgeproto`` service over the shared edge state."""

    def __init__(self, objects: EdgeObjects, presence_: presence.ReplicaPresence) -> None:
        self.objects = objects
        self.store = objects.store
        self.presence = presence_
        self.special: dict[str, Callable[..., Any]] = {
            "InjectCloudletInfo": _unary(self.inject_cloudlet_info),
            "EvictCloudletInfo": _unary(self.evict_cloudlet_info),
            "ShowCloudletMetrics": _streaming(self.show_cloudlet_metrics),
            "ShowAppInstMetrics": _streaming(self.show_app_inst_metrics),
            "ShowController": _streaming(self.show_controller),
            "ShowNode": _streaming(self.show_node),
            "ShowNodeLocal": _streaming(self.show_node_local),
            "RunCommand": _unary(self.run_command),
            "SendLocalRequest": _unary(self.run_command),
            "StreamNotice": self._stream_notice_method(),
        }

    def servicers(self) -> list[object]:
        """Every ``edgeproto`` servicer, each a subclass of its generated servicer class."""
        built: list[object] = []
        for messages, stubs in MODULES:
            for service in messages.DESCRIPTOR.services_by_name.values():
                base = getattr(stubs, f"{service.name}Servicer")
                methods = {m.name: self._method(m) for m in service.methods}
                built.append(type(service.name, (base,), methods)())
        return built

    def _method(self, method: MethodDescriptor) -> Callable[..., Any]:
        if method.name in self.special:
            return self.special[method.name]
        verb = next((v for v in VERBS if method.name.startswith(v)), None)
        kind = k.BY_KIND.get(method.input_type.full_name)
        if verb is None or kind is None:
            raise LookupError(f"no implementation for {method.full_name}")
        if verb == "Show":
            return self._show(kind)
        if method.server_streaming:
            return _streaming(self._tracked(verb, kind))
        return _unary(self._plain(verb, kind))

    # -- the generic methods ---------------------------------------------------------------------

    def _operation(self, verb: str) -> Callable[..., Any]:
        return {
            "Create": self.objects.create,
            "Update": self.objects.update,
            "Delete": self.objects.delete,
        }[verb]

    def _plain(self, verb: str, kind: k.EdgeType) -> Unary:
        operation = self._operation(verb)

        async def call(request: Any) -> Message:
            Tenant.of_caller().check_write(kind, kind.key_of(request))
            await operation(kind, request)
            return result_pb2.Result(message=DONE[verb])

        return call

    def _tracked(self, verb: str, kind: k.EdgeType) -> Streaming:
        operation = self._operation(verb)

        async def call(request: Any) -> AsyncGenerator[Message]:
            tenant = Tenant.of_caller()
            tenant.check_write(kind, kind.key_of(request))
            tenant.check_override(request)
            progress, revision = await operation(kind, request)
            if progress is None:
                yield result_pb2.Result(message="No changes")
                return
            async with contextlib.aclosing(follow(self.store, progress, revision)) as results:
                async for result in results:
                    yield result

        return call

    def _show(self, kind: k.EdgeType) -> Callable[..., AsyncIterator[Message]]:
        objects = self.objects

        async def method(
            self: object, request: Any, context: grpc.aio.ServicerContext
        ) -> AsyncIterator[Message]:
            tenant = Tenant.of_caller()
            try:
                shown = [
                    (obj, revision)
                    for obj, revision in await objects.shown(kind, request)
                    if tenant.may_see(kind, kind.key_of(obj))
                ]
            except Rejected as rejected:
                await abort_rejected(context, rejected)
            except StoreError as error:
                await abort_store_error(context, error)
            # The revisions shown, before the first object: a client can revalidate the list.
            await context.send_initial_metadata(revisions.etag_metadata(r for _, r in shown))
            for obj, _ in shown:
                yield obj

        return method

    # -- the special methods ---------------------------------------------------------------------

    async def inject_cloudlet_info(self, request: cloudlet_pb2.CloudletInfo) -> Message:
        Tenant.of_caller().check_write(k.CLOUDLET_INFO, request.key)
        info = without_fields(k.CLOUDLET_INFO, request)
        found = Violations()
        check_key(k.CLOUDLET_INFO, info, found)
        if found:
            raise Rejected.invalid(found)
        async with self.store.transaction() as tx:
            if await load(tx, k.CLOUDLET, info.key) is None:
                raise not_found(k.CLOUDLET, info.key, "key")
            await put(tx, k.CLOUDLET_INFO, info)
        return result_pb2.Result(message="Injected")

    async def evict_cloudlet_info(self, request: cloudlet_pb2.CloudletInfo) -> Message:
        Tenant.of_caller().check_write(k.CLOUDLET_INFO, request.key)
        found = Violations()
        check_key(k.CLOUDLET_INFO, request, found)
        if found:
            raise Rejected.invalid(found)
        async with self.store.transaction() as tx:
            key = k.CLOUDLET_INFO.store_key(request)
            if await tx.get(k.CLOUDLET_INFO.kind, key) is None:
                raise not_found(k.CLOUDLET_INFO, request.key, "key")
            await tx.delete(k.CLOUDLET_INFO.kind, key)
        return result_pb2.Result(message="Evicted")

    async def show_cloudlet_metrics(self, request: Any) -> AsyncGenerator[Message]:
        tenant = Tenant.of_caller()
        visible = functools.partial(tenant.may_see, k.CLOUDLET)
        for metric in await metrics.cloudlet_metrics(self.store, request, visible):
            yield metric

    async def show_app_inst_metrics(self, request: Any) -> AsyncGenerator[Message]:
        tenant = Tenant.of_caller()
        visible = functools.partial(tenant.may_see, k.APP_INST)
        for metric in await metrics.app_inst_metrics(self.store, request, visible):
            yield metric

    async def show_controller(self, request: Any) -> AsyncGenerator[Message]:
        # A Show right after start should see this replica, whose first heartbeat may be pending.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.presence.registered.wait(), REGISTRATION_WAIT_SECONDS)
        live = await presence.live_controllers(self.store)
        for controller in await self.objects.show(k.CONTROLLER, request):
            if controller.key.addr in live:
                yield controller

    async def show_node(self, request: Any) -> AsyncGenerator[Message]:
        live = await presence.live_controllers(self.store)
        async for node in self._nodes(request, lambda addr: addr in live):
            yield node

    async def show_node_local(self, request: Any) -> AsyncGenerator[Message]:
        here = self.presence.address
        async for node in self._nodes(request, lambda addr: addr == here):
            yield node

    async def _nodes(
        self, request: Any, connected_to: Callable[[str], bool]
    ) -> AsyncGenerator[Message]:
        owners = await presence.node_controllers(self.store)
        for node in await self.objects.show(k.NODE, request):
            if connected_to(owners.get(k.NODE.store_key(node), "")):
                yield node

    async def run_command(self, request: exec_pb2.ExecRequest) -> Message:
        Tenant.of_caller().check_write(k.APP_INST, request.app_inst_key)
        return await edge_exec.run_command(self.store, request)

    def _stream_notice_method(self) -> Callable[..., AsyncIterator[Message]]:
        apis = self

        async def StreamNotice(
            self: object, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
        ) -> AsyncIterator[Message]:
            sync = NoticeSync(apis.store, apis.presence.address, context.peer(), apis.objects.clock)
            try:
                async with contextlib.aclosing(sync.run(requests)) as notices:
                    async for notice in notices:
                        yield notice
            except Rejected as rejected:
                await abort_rejected(context, rejected)
            except StoreError as error:
                await abort_store_error(context, error)

        return StreamNotice
