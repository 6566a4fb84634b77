"""The ``PodFilter``, ``ImageFilter`` and ``EventFilter`` rules of the runtime API.

As the API documents them: conditions inside one filter are AND-ed, separate filters are OR-ed,
and no filter at all matches everything. Per field, ``ids``/``states``/``cgroups``/``prefixes``/
``base_names``/``keywords``/``full_names`` match when *any* listed value matches, while
``app_names``/``image_ids``/``network_names``/``labels``/``annotations`` need *all* of them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence

from gen.v1alpha import api_pb2


def _has_all(have: Iterable[api_pb2.KeyValue], wanted: Iterable[api_pb2.KeyValue]) -> bool:
    pairs = {(kv.Key, kv.value) for kv in have}
    return all((kv.Key, kv.value) in pairs for kv in wanted)


def pod_matches(pod: api_pb2.Pod, f: api_pb2.PodFilter) -> bool:
    """Whether ``pod`` meets every condition of one filter."""
    app_names = {app.name for app in pod.apps}
    image_ids = {app.image.id for app in pod.apps}
    networks = {network.name for network in pod.networks}
    return (
        (not f.ids or pod.id in f.ids)
        and (not f.states or pod.state in f.states)
        and all(name in app_names for name in f.app_names)
        and all(image_id in image_ids for image_id in f.image_ids)
        and all(name in networks for name in f.network_names)
        and _has_all(pod.annotations, f.annotations)
        and (not f.cgroups or pod.cgroup in f.cgroups)
        # The pod's own cgroup is a prefix of one of the given (sub-)cgroups.
        and (
            not f.pod_sub_cgroups
            or (bool(pod.cgroup) and any(sub.startswith(pod.cgroup) for sub in f.pod_sub_cgroups))
        )
    )


def image_matches(image: api_pb2.Image, f: api_pb2.ImageFilter) -> bool:
    """Whether ``image`` meets every condition of one filter."""
    return (
        (not f.ids or image.id in f.ids)
        and (not f.prefixes or any(image.name.startswith(p) for p in f.prefixes))
        and (not f.base_names or posixpath.basename(image.name) in f.base_names)
        and (not f.keywords or any(k in image.name for k in f.keywords))
        and _has_all(image.labels, f.labels)
        and (not f.imported_after or image.import_timestamp > f.imported_after)
        and (not f.imported_before or image.import_timestamp < f.imported_before)
        and _has_all(image.annotations, f.annotations)
        and (not f.full_names or image.name in f.full_names)
    )


def event_matches(event: api_pb2.Event, f: api_pb2.EventFilter) -> bool:
    """Whether ``event`` passes the filter; ``since_time`` is inclusive, ``until_time`` not."""
    return (
        (not f.types or event.type in f.types)
        and (not f.ids or event.id in f.ids)
        and (not f.names or getattr(event, "from") in f.names)
        and (not f.since_time or event.time >= f.since_time)
        and (not f.until_time or event.time < f.until_time)
    )


def select_pods(
    pods: Iterable[api_pb2.Pod], filters: Sequence[api_pb2.PodFilter]
) -> list[api_pb2.Pod]:
    """The pods matching any of ``filters`` (all pods when there are none)."""
    return [p for p in pods if not filters or any(pod_matches(p, f) for f in filters)]


def select_images(
    images: Iterable[api_pb2.Image], filters: Sequence[api_pb2.ImageFilter]
) -> list[api_pb2.Image]:
    """The images matching any of ``filters`` (all images when there are none)."""
    return [i for i in images if not filters or any(image_matches(i, f) for f in filters)]
