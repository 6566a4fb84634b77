"""The container runtime API ``v1alpha.PublicAPI``: a read-only view of pods, images, events, logs.

Behaviour where SPEC is silent (see :mod:`app.services.rkt.pods` for the mapping itself):
- ``detail`` false lists pods without apps and manifest (pods still preparing show only id and
  state, as the document says) and images without manifest; ``detail`` true adds apps whose image
  carries only its id, and the manifest; Inspect* returns everything.
- All times are seconds since the epoch (pod timestamps: nanoseconds). ``since_time`` is
  inclusive, ``until_time`` exclusive. ListenEvents without ``since_time`` sends only new events;
  with one it first replays the events from then on, but never from before this API service
  started (the document: events are those since the API service started). The history behind
  them stays stored across restarts and still shows in pods (times, states) and GetLogs. A
  stream with ``until_time`` closes at that moment. Streams that open together start from one
  shared read of the instances, so one may also get a change made a moment before it opened.
- A ``node`` account (``portico node-agent``) sees only the pods on the node named like it, as
  a kubelet sees only its own: other pods are NOT_FOUND, and lists and events leave them out.
- GetLogs: one line per transition of the pod's app, interleaved with what the app writes while
  it runs (simulated, see :mod:`app.services.rkt.app_output`); ``lines`` 0 means all (at most
  ``MAX_LOG_LINES``, the latest); an ``app_name`` the pod does not have is NOT_FOUND. The first
  reply carries the existing lines (possibly none); with ``follow`` new lines follow until the
  client leaves, ``until_time`` passes or the pod is garbage-collected.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc

from app import __version__
from app.services import revisions
from app.services.kudo.images import InvalidReference, parse_reference
from app.services.kudo.records import BY_IMAGE, INSTANCE, NODE, InstanceRecord, NodeRecord
from app.services.rkt import filters
from app.services.rkt.event_streams import EventStreams
from app.services.rkt.events import images_present
from app.services.rkt.images import Detail, image_of
from app.services.rkt.logs import PodLog, output_interval_ns
from app.services.rkt.pods import pod_of
from app.services.rkt.visibility import visible
from app.services.status import Violations, abort, abort_invalid, abort_store_error
from app.settings.limits import MAX_FILTERS
from app.store import ObjectStore, Record, StoreError
from gen.scheduler import scheduler_pb2 as spb
from gen.v1alpha import api_pb2 as pb
from gen.v1alpha import api_pb2_grpc as pb_grpc

RKT_VERSION = "1.30.0"
APPC_VERSION = "0.8.11"
API_VERSION = "1.0.0-alpha"


def global_flags(tls: bool) -> pb.GlobalFlags:
    """The flags this server runs the runtime API with, as any caller may see them.

    rkt filled ``dir`` and the config folders with local paths for callers on its own host (its
    API service listened on localhost only); Portico is called over the network, so the paths
    stay empty: they would only tell a remote caller where the server keeps its state.
    """
    return pb.GlobalFlags(
        # "tls": gRPC is served without TLS (a TLS-terminating proxy must sit in front).
        insecure_flags="none" if tls else "tls",
        trust_keys_from_https=False,
    )


async def _check_filter_count(context: grpc.aio.ServicerContext, count: int) -> None:
    """Every filter is matched against every pod or image: their number is capped."""
    if count > MAX_FILTERS:
        found = Violations()
        found.add("filters", f"at most {MAX_FILTERS} filters (got {count})")
        await abort_invalid(context, found)


def _times_violations(since: int, until: int, prefix: str = "") -> Violations:
    found = Violations()
    found.check(since >= 0, f"{prefix}since_time", "must not be negative")
    found.check(until >= 0, f"{prefix}until_time", "must not be negative")
    if since and until and until <= since:
        found.add(f"{prefix}until_time", "must be after since_time")
    return found


class RuntimeService(pb_grpc.PublicAPIServicer):
    """Pods and images on the nodes, as the scheduler placed them."""

    def __init__(
        self,
        store: ObjectStore,
        global_flags: pb.GlobalFlags,
        step_seconds: float = 1.0,
        image_retention_seconds: float = 3600.0,
    ) -> None:
        self.store = store
        self.global_flags = global_flags
        self.image_retention_ns = int(image_retention_seconds * 1e9)
        self.output_interval_ns = output_interval_ns(step_seconds)
        self.version = __version__
        self.open_streams = 0
        self.events = EventStreams(store, self.image_retention_ns)

    async def _visible_records(self) -> list[tuple[Record, InstanceRecord]]:
        """The instances the caller may see, with their records."""
        return [
            (r, i)
            for r in await self.store.list(INSTANCE)
            if visible(i := InstanceRecord.from_bytes(r.data))
        ]

    def _images(self, instances: list[InstanceRecord]) -> dict:
        """The images on the nodes now (see :mod:`app.services.rkt.images`)."""
        return images_present(instances, self.image_retention_ns)

    async def _node_states(self) -> dict[str, str]:
        """Each registered node's state as pods show it (see :mod:`app.services.rkt.pods`)."""
        return _node_state(await self.store.list(NODE))

    async def _pod_instance(self, pod_id: str, context: grpc.aio.ServicerContext) -> tuple:
        try:
            record = await self.store.get(INSTANCE, pod_id)
        except StoreError as exc:
            await abort_store_error(context, exc)
        instance = None if record is None else InstanceRecord.from_bytes(record.data)
        if record is None or instance is None or not visible(instance):
            await abort(context, grpc.StatusCode.NOT_FOUND, f"pod {pod_id!r} not found")
        return instance, record.revision

    async def GetInfo(
        self, request: pb.GetInfoRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetInfoResponse:
        return pb.GetInfoResponse(
            info=pb.Info(
                # Build metadata says which server emulates this rkt API version.
                rkt_version=f"{RKT_VERSION}+portico.{self.version.split('+')[0]}",
                appc_version=APPC_VERSION,
                api_version=API_VERSION,
                global_flags=self.global_flags,
            )
        )

    async def ListPods(
        self, request: pb.ListPodsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListPodsResponse:
        await _check_filter_count(context, len(request.filters))
        records = await self._visible_records()
        instances = [i for _, i in records]
        imports = {k: at for k, (_, at) in self._images(instances).items()}
        nodes = await self._node_states()
        # As for InspectPod: the instances, and what their pods show of nodes and images.
        shown = sorted({f"{i.node}={nodes.get(i.node, '')}" for i in instances if i.node})
        shown += sorted(f"{image}={at}" for image, at in imports.items())
        held = (r.revision for r, _ in records)
        await context.send_initial_metadata(revisions.etag_metadata(held, shown))
        # Filters see the whole pod; the reply then shows the requested detail.
        full = [(pod_of(i, Detail.FULL, imports, nodes), i) for i in instances]
        chosen = {p.id for p in filters.select_pods([p for p, _ in full], request.filters)}
        detail = Detail.LISTED if request.detail else Detail.REDUCED
        pods = [pod_of(i, detail, imports, nodes) for p, i in full if p.id in chosen]
        return pb.ListPodsResponse(pods=pods)

    async def InspectPod(
        self, request: pb.InspectPodRequest, context: grpc.aio.ServicerContext
    ) -> pb.InspectPodResponse:
        if not request.id:
            found = Violations()
            found.add("id", "is required (the pod id)")
            await abort_invalid(context, found)
        instance, revision = await self._pod_instance(request.id, context)
        # Index reads: the instances that ran this pod's image, and its node's record.
        try:
            sharing = await self.store.list_where(INSTANCE, BY_IMAGE, image_id(instance))
            node = await self.store.get(NODE, instance.node) if instance.node else None
        except StoreError as exc:
            await abort_store_error(context, exc)
        instances = [i for r in sharing if visible(i := InstanceRecord.from_bytes(r.data))]
        imports = {k: at for k, (_, at) in self._images(instances).items()}
        nodes = {} if node is None else _node_state([node])
        # The pod is its instance's record, its node's state and its image's import time (gone
        # once the image's retention ends: then the pod's own). The node's record changes at
        # every usage report, its state seldom: the state, not its revision, is in the tag.
        shown = (nodes.get(instance.node, ""), str(imports.get(image_id(instance), "")))
        await context.send_initial_metadata(revisions.etag_metadata((revision,), shown))
        return pb.InspectPodResponse(pod=pod_of(instance, Detail.FULL, imports, nodes))

    async def ListImages(
        self, request: pb.ListImagesRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListImagesResponse:
        await _check_filter_count(context, len(request.filters))
        records = await self._visible_records()
        imports = self._images([i for _, i in records])
        # The instances say which images came and when; the clock, which of them are gone.
        held = (r.revision for r, _ in records)
        await context.send_initial_metadata(revisions.etag_metadata(held, sorted(imports)))
        everything = [image_of(ref, at, Detail.FULL) for ref, at in imports.values()]
        chosen = {i.id for i in filters.select_images(everything, request.filters)}
        detail = Detail.LISTED if request.detail else Detail.REDUCED
        images = [
            image_of(ref, at, detail)
            for ref, at in sorted(imports.values(), key=lambda pair: (pair[1], pair[0].id))
            if ref.id in chosen
        ]
        return pb.ListImagesResponse(images=images)

    async def InspectImage(
        self, request: pb.InspectImageRequest, context: grpc.aio.ServicerContext
    ) -> pb.InspectImageResponse:
        if not request.id:
            found = Violations()
            found.add("id", "is required (the image id, sha512-...)")
            await abort_invalid(context, found)
        # An image is on the nodes by the instances that ran it (an index read) and the clock.
        try:
            records = await self.store.list_where(INSTANCE, BY_IMAGE, request.id)
        except StoreError as exc:
            await abort_store_error(context, exc)
        ran = [(r, i) for r in records if visible(i := InstanceRecord.from_bytes(r.data))]
        imports = self._images([i for _, i in ran])
        if request.id not in imports:
            await abort(context, grpc.StatusCode.NOT_FOUND, f"image {request.id!r} not found")
        # While it is there, those instances alone say what it shows.
        await context.send_initial_metadata(revisions.etag_metadata(r.revision for r, _ in ran))
        reference, at = imports[request.id]
        return pb.InspectImageResponse(image=image_of(reference, at, Detail.FULL))

    async def ListenEvents(
        self, request: pb.ListenEventsRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.ListenEventsResponse]:
        wanted = request.filter
        found = _times_violations(wanted.since_time, wanted.until_time, "filter.")
        for index, kind in enumerate(wanted.types):
            found.check(kind in pb.EventType.values(), f"filter.types[{index}]", "unknown type")
        if found:
            await abort_invalid(context, found)
        self.open_streams += 1
        try:
            async for reply in self.events.listen(wanted, context):
                yield reply
        finally:
            self.open_streams -= 1

    async def GetLogs(
        self, request: pb.GetLogsRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.GetLogsResponse]:
        found = _times_violations(request.since_time, request.until_time)
        found.check(bool(request.pod_id), "pod_id", "is required (the pod id)")
        found.check(request.lines >= 0, "lines", "must not be negative")
        if found:
            await abort_invalid(context, found)
        instance, revision = await self._pod_instance(request.pod_id, context)
        if request.app_name and request.app_name != instance.name:
            await abort(
                context,
                grpc.StatusCode.NOT_FOUND,
                f"pod {request.pod_id!r} has no app {request.app_name!r} "
                f"(its app is {instance.name!r})",
            )
        log = PodLog(
            self.output_interval_ns,
            request.since_time * 1_000_000_000,
            request.until_time * 1_000_000_000,
        )
        self.open_streams += 1
        try:
            lines, cursor = log.first(instance, request.lines)
            yield pb.GetLogsResponse(lines=[line.text for line in lines])
            if not request.follow or instance.status == spb.TERMINATED:
                return
            async with contextlib.aclosing(self.store.watch(INSTANCE, revision)) as events:
                async for new in log.follow(instance, events, cursor):
                    yield pb.GetLogsResponse(lines=[line.text for line in new])
        finally:
            self.open_streams -= 1


def _node_state(records: list[Record]) -> dict[str, str]:
    """The state of each node of ``records`` as pods show it."""
    states = {}
    for record in records:
        node = NodeRecord.from_bytes(record.data)
        if node.healthy:
            states[node.id] = "READY"
        else:
            states[node.id] = "FAILED" if node.status == spb.FAILED else "NOT_READY"
    return states


def image_id(instance: InstanceRecord) -> str:
    """The id of the image ``instance`` runs ("" if its reference does not parse)."""
    try:
        return parse_reference(instance.uri).id
    except InvalidReference:
        return ""
