"""Images on the nodes: pulled when a pod using them is placed, removed once unused for a while.

An image is imported when the first pod using it is placed (again, after a removal). When the
last pod using it is garbage-collected (its instance TERMINATED), the image stays for the
retention (``PORTICO_IMAGE_RETENTION_SECONDS``) and is then removed, with an IMAGE_REMOVED event,
unless a new pod uses it by then. Presence is computed from the instances' transitions and the
clock (:class:`ImageShelf`), so every replica and every stream agrees on it without storing it.

Images are not pulled for real: sizes and labels are simulated but plausible: known images
(nginx, redis, postgres, etcd, ...) have about their real compressed size, others a size fixed
by a hash of the reference (20-400 MiB); labels are appc's ``version``, ``os`` and ``arch``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from app.services.kudo.images import ImageReference
from app.sim.seeded import unit_interval
from gen.v1alpha import api_pb2 as pb

APPC_VERSION = "0.8.11"
MiB = 1024 * 1024
_FORMATS = {
    "docker": pb.ImageFormat(type=pb.IMAGE_TYPE_DOCKER, version="2.2"),
    "oci": pb.ImageFormat(type=pb.IMAGE_TYPE_OCI, version="1.0.0"),
}
# About the compressed size of the official linux/amd64 images, by base name.
_KNOWN_SIZES_MIB = {
    "nginx": 67,
    "redis": 45,
    "postgres": 152,
    "etcd": 58,
    "busybox": 2,
    "alpine": 4,
    "httpd": 58,
    "mysql": 170,
    "memcached": 30,
}


class Detail:
    """How much of a pod or image to show."""

    REDUCED = 0  # ListPods/ListImages with detail false
    LISTED = 1  # ListPods/ListImages with detail true
    FULL = 2  # InspectPod/InspectImage


def key_values(pairs: Iterable[tuple[str, str]]) -> list[pb.KeyValue]:
    """``KeyValue`` messages of ``pairs``."""
    return [pb.KeyValue(Key=k, value=v) for k, v in pairs]


def image_size(reference: ImageReference) -> int:
    """The simulated size of the image in bytes (stable for a reference)."""
    base = reference.name.rsplit("/", 1)[-1]
    mib = _KNOWN_SIZES_MIB.get(base)
    if mib is None:
        mib = 20 + int(380 * unit_interval("image-size", reference.name))
    # Tags differ a little in size, as real builds do.
    return int((mib + 3 * unit_interval("image-tag", reference.uri)) * MiB)


def image_labels(reference: ImageReference) -> list[tuple[str, str]]:
    """appc's labels of the image."""
    return [("version", reference.version), ("os", "linux"), ("arch", "amd64")]


def image_of(reference: ImageReference, imported_ns: int, detail: int) -> pb.Image:
    """The image a reference names, imported at ``imported_ns``."""
    labels = image_labels(reference)
    image = pb.Image(
        base_format=_FORMATS[reference.format],
        id=reference.id,
        name=reference.name,
        version=reference.version,
        import_timestamp=imported_ns // 1_000_000_000,
        size=image_size(reference),
        annotations=key_values([("scheduler/uri", reference.uri)]),
        labels=key_values(labels),
    )
    if detail != Detail.REDUCED:
        image.manifest = json.dumps(
            {
                "acKind": "ImageManifest",
                "acVersion": APPC_VERSION,
                "name": reference.name,
                "labels": [{"name": k, "value": v} for k, v in labels],
                "annotations": [{"name": "scheduler/uri", "value": reference.uri}],
            },
            sort_keys=True,
        ).encode()
    return image


@dataclass
class ImageShelf:
    """Which images the nodes hold, moved forward transition by transition, in time order."""

    retention_ns: int
    # image id → (reference, import time) of the images present
    present: dict[str, tuple[ImageReference, int]] = field(default_factory=dict)
    users: dict[str, set[str]] = field(default_factory=dict)
    # image id → when it is removed (present, unused)
    removal_due: dict[str, int] = field(default_factory=dict)

    def placed(self, pod: str, reference: ImageReference, at_ns: int) -> bool:
        """A pod using the image was placed; whether that imported it."""
        self.users.setdefault(reference.id, set()).add(pod)
        self.removal_due.pop(reference.id, None)
        if reference.id in self.present:
            return False
        self.present[reference.id] = (reference, at_ns)
        return True

    def released(self, pod: str, reference: ImageReference, at_ns: int) -> None:
        """A pod using the image was garbage-collected."""
        users = self.users.get(reference.id, set())
        users.discard(pod)
        if not users and reference.id in self.present:
            self.removal_due[reference.id] = at_ns + self.retention_ns

    def next_due(self) -> int | None:
        """When the next unused image is removed, if one is waiting."""
        return min(self.removal_due.values(), default=None)

    def remove_due(self, now_ns: int) -> list[tuple[ImageReference, int]]:
        """Remove the images due by ``now_ns``; the removed ones with their removal time."""
        if not self.removal_due:
            return []  # asked at every transition of every stream: mostly nothing is waiting
        due = sorted((at, image) for image, at in self.removal_due.items() if at <= now_ns)
        removed = []
        for at, image in due:
            del self.removal_due[image]
            reference, _ = self.present.pop(image)
            removed.append((reference, at))
        return removed
