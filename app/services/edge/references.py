"""Which objects refer to which: checked forwards on Create/Update, backwards on Delete.

One table drives both directions. Deleting an object that something still refers to is
FAILED_PRECONDITION naming the referrer; finding referrers scans the referring kind (the edge
world is small; an index would be the next step if it were not).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message
from google.rpc import error_details_pb2

import app.services.edge.kinds as k
from app.services.status import Rejected
from app.store import Reader
from gen.edgeproto import developer_pb2


@dataclass(frozen=True)
class Reference:
    """``source`` objects name a ``target`` object at ``path``."""

    source: k.EdgeType
    path: str
    target: k.EdgeType
    key_at: Callable[[Message], Message | None]


def _message_at(path: str) -> Callable[[Message], Message | None]:
    def key_at(obj: Message) -> Message | None:
        value = obj
        for part in path.split("."):
            value = getattr(value, part)
        return None if k.is_empty(value) else value

    return key_at


def _developer_named(obj: Any) -> Message | None:
    name = obj.key.developer
    return developer_pb2.DeveloperKey(name=name) if name else None


def _ref(source: k.EdgeType, path: str, target: k.EdgeType) -> Reference:
    return Reference(source, path, target, _message_at(path))


REFERENCES = (
    _ref(k.APP, "key.developer_key", k.DEVELOPER),
    _ref(k.APP, "default_flavor", k.FLAVOR),
    _ref(k.CLUSTER, "default_flavor", k.FLAVOR),
    _ref(k.CLOUDLET, "key.operator_key", k.OPERATOR),
    _ref(k.CLUSTER_INST, "key.cluster_key", k.CLUSTER),
    _ref(k.CLUSTER_INST, "key.cloudlet_key", k.CLOUDLET),
    Reference(k.CLUSTER_INST, "key.developer", k.DEVELOPER, _developer_named),
    _ref(k.CLUSTER_INST, "flavor", k.FLAVOR),
    _ref(k.APP_INST, "key.app_key", k.APP),
    _ref(k.APP_INST, "key.cluster_inst_key", k.CLUSTER_INST),
    _ref(k.APP_INST, "flavor", k.FLAVOR),
)


def not_found(kind: k.EdgeType, key: Message, path: str = "") -> Rejected:
    """NOT_FOUND naming the object (and the field that refers to it), with a ResourceInfo."""
    text = f"{kind.name} {k.key_string(key)} not found"
    info = error_details_pb2.ResourceInfo(
        resource_type=kind.kind,
        resource_name=k.key_string(key),
        description=f"{path}: {text}" if path else text,
    )
    return Rejected(grpc.StatusCode.NOT_FOUND, info.description, details=(info,))


async def missing_reference(reader: Reader, kind: k.EdgeType, obj: Message) -> Rejected | None:
    """NOT_FOUND (``path: Target {...} not found``) for the first missing reference of ``obj``."""
    for ref in REFERENCES:
        if ref.source is not kind:
            continue
        key = ref.key_at(obj)
        if key is None:
            continue
        if await reader.get(ref.target.kind, k.key_string(key)) is None:
            return not_found(ref.target, key, ref.path)
    return None


async def referrer(
    reader: Reader,
    kind: k.EdgeType,
    key: Message,
    sources: tuple[k.EdgeType, ...] | None = None,
) -> str | None:
    """``ClusterInst {...} (its key.cloudlet_key)``: the first object referring to ``key``."""
    wanted = k.key_string(key)
    for ref in REFERENCES:
        if ref.target is not kind or (sources is not None and ref.source not in sources):
            continue
        for record in await reader.list(ref.source.kind):
            other = ref.key_at(ref.source.parse(record.data))
            if other is not None and k.key_string(other) == wanted:
                return f"{ref.source.name} {record.key} (its {ref.path})"
    return None
