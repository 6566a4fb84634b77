"""The edge controller's object types, read from the descriptors: store kind, key and labels.

Every keyed ``edgeproto`` message is stored as its protobuf bytes under the kind
``edgeproto.<Message>`` (its full name) and a key string derived from its key message: the
compact JSON of the key (proto field names, sorted, default values left out), e.g.
``{"developer_key":{"name":"acme"},"name":"web","version":"1.0"}``. The form is readable in the
event log, deterministic (equal keys give equal strings) and needs no per-type code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from app.services.edge.update_fields import READ_ONLY
from gen.edgeproto import (
    app_inst_pb2,
    app_pb2,
    cloudlet_pb2,
    cluster_pb2,
    clusterinst_pb2,
    controller_pb2,
    developer_pb2,
    flavor_pb2,
    node_pb2,
    operator_pb2,
    refs_pb2,
)

KEY_FIELD = "key"
FIELDS_FIELD = "fields"


@dataclass(frozen=True)
class EdgeType:
    """One keyed object type: its message, store kind and the fields users may not update."""

    message: type[Message]
    # Fields the controller or the resource manager owns (observed state): never in ``fields``.
    read_only: frozenset[str] = frozenset()

    @property
    def descriptor(self) -> Descriptor:
        # The stubs type DESCRIPTOR as the pure-Python or the upb class (whichever backend runs);
        # both have the API used here.
        return cast(Descriptor, self.message.DESCRIPTOR)

    @property
    def name(self) -> str:
        """The message name users know (``ClusterInst``)."""
        return self.descriptor.name

    @property
    def kind(self) -> str:
        """The store kind (``edgeproto.ClusterInst``)."""
        return self.descriptor.full_name

    def key_of(self, obj: Message) -> Message:
        """The object's key message."""
        return getattr(obj, KEY_FIELD)

    def store_key(self, obj: Message) -> str:
        """The store key of ``obj`` (an object of this type)."""
        return key_string(self.key_of(obj))

    def parse(self, data: bytes) -> Any:
        return self.message.FromString(data)

    def describe(self, obj: Message) -> str:
        """``ClusterInst {"cluster_key":...}``: how errors name an object."""
        return f"{self.name} {self.store_key(obj)}"


def key_string(key: Message) -> str:
    """The stable store key of a key message: its compact, sorted JSON."""
    value = json_format.MessageToDict(key, preserving_proto_field_name=True)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def is_whole_key(key: Message) -> bool:
    """Whether every field of ``key`` (nested keys field by field) is set: then the only object
    a filter on it can match is the one stored under its key string, so one point read finds it.
    A key with a field left empty matches every value there and needs a scan."""
    for field in key.DESCRIPTOR.fields:
        if field.is_repeated:
            return False
        if field.message_type is not None:
            if not key.HasField(field.name) or not is_whole_key(getattr(key, field.name)):
                return False
        elif getattr(key, field.name) == field.default_value:
            return False
    return True


def is_empty(message: Message) -> bool:
    """Whether no field of ``message`` is set (an absent key or reference)."""
    return not message.ListFields()


DEVELOPER = EdgeType(developer_pb2.Developer)
OPERATOR = EdgeType(operator_pb2.Operator)
FLAVOR = EdgeType(flavor_pb2.Flavor)
CLUSTER = EdgeType(cluster_pb2.Cluster)
APP = EdgeType(app_pb2.App)
CLOUDLET = EdgeType(cloudlet_pb2.Cloudlet)
# What users may not update is a field rule (the Update's `fields`), read from there.
CLUSTER_INST = EdgeType(clusterinst_pb2.ClusterInst, read_only=READ_ONLY["ClusterInst"])
APP_INST = EdgeType(app_inst_pb2.AppInst, read_only=READ_ONLY["AppInst"])
CLOUDLET_INFO = EdgeType(cloudlet_pb2.CloudletInfo)
CLUSTER_INST_INFO = EdgeType(clusterinst_pb2.ClusterInstInfo)
APP_INST_INFO = EdgeType(app_inst_pb2.AppInstInfo)
CONTROLLER = EdgeType(controller_pb2.Controller)
NODE = EdgeType(node_pb2.Node)
CLOUDLET_REFS = EdgeType(refs_pb2.CloudletRefs)
CLUSTER_REFS = EdgeType(refs_pb2.ClusterRefs)

ALL_TYPES = (
    DEVELOPER,
    OPERATOR,
    FLAVOR,
    CLUSTER,
    APP,
    CLOUDLET,
    CLUSTER_INST,
    APP_INST,
    CLOUDLET_INFO,
    CLUSTER_INST_INFO,
    APP_INST_INFO,
    CONTROLLER,
    NODE,
    CLOUDLET_REFS,
    CLUSTER_REFS,
)
BY_NAME = {t.name: t for t in ALL_TYPES}
BY_KIND = {t.kind: t for t in ALL_TYPES}

# The objects users define (the desired state), in dependency order.
DESIRED = (FLAVOR, DEVELOPER, OPERATOR, CLUSTER, APP, CLOUDLET, CLUSTER_INST, APP_INST)
# What the simulated cloudlet resource manager reports, one per tracked object.
INFO_OF = {
    CLOUDLET.name: CLOUDLET_INFO,
    CLUSTER_INST.name: CLUSTER_INST_INFO,
    APP_INST.name: APP_INST_INFO,
}
