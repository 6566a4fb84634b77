from ..edgeproto import cloudlet_pb2 as _cloudlet_pb2
from ..edgeproto import cluster_pb2 as _cluster_pb2
from ..edgeproto import common_pb2 as _common_pb2
from ..edgeproto import flavor_pb2 as _flavor_pb2
from ..edgeproto import result_pb2 as _result_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ClusterInst(_message.Message):
    __slots__ = ("fields", "key", "flavor", "liveness", "auto", "state", "errors", "crm_override", "ip_access", "allocated_ip", "node_flavor", "deployment", "num_masters", "num_nodes")
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    FLAVOR_FIELD_NUMBER: _ClassVar[int]
    LIVENESS_FIELD_NUMBER: _ClassVar[int]
    AUTO_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    CRM_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    IP_ACCESS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_IP_FIELD_NUMBER: _ClassVar[int]
    NODE_FLAVOR_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    NUM_MASTERS_FIELD_NUMBER: _ClassVar[int]
    NUM_NODES_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    key: ClusterInstKey
    flavor: _flavor_pb2.FlavorKey
    liveness: _common_pb2.Liveness
    auto: bool
    state: _common_pb2.TrackedState
    errors: _containers.RepeatedScalarFieldContainer[str]
    crm_override: _common_pb2.CRMOverride
    ip_access: _common_pb2.IpAccess
    allocated_ip: str
    node_flavor: str
    deployment: str
    num_masters: int
    num_nodes: int
    def __init__(self, fields: _Optional[_Iterable[str]] = ..., key: _Optional[_Union[ClusterInstKey, _Mapping]] = ..., flavor: _Optional[_Union[_flavor_pb2.FlavorKey, _Mapping]] = ..., liveness: _Optional[_Union[_common_pb2.Liveness, str]] = ..., auto: _Optional[bool] = ..., state: _Optional[_Union[_common_pb2.TrackedState, str]] = ..., errors: _Optional[_Iterable[str]] = ..., crm_override: _Optional[_Union[_common_pb2.CRMOverride, str]] = ..., ip_access: _Optional[_Union[_common_pb2.IpAccess, str]] = ..., allocated_ip: _Optional[str] = ..., node_flavor: _Optional[str] = ..., deployment: _Optional[str] = ..., num_masters: _Optional[int] = ..., num_nodes: _Optional[int] = ...) -> None: ...

class ClusterInstInfo(_message.Message):
    __slots__ = ("fields", "key", "notify_id", "state", "errors")
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    NOTIFY_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    key: ClusterInstKey
    notify_id: int
    state: _common_pb2.TrackedState
    errors: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, fields: _Optional[_Iterable[str]] = ..., key: _Optional[_Union[ClusterInstKey, _Mapping]] = ..., notify_id: _Optional[int] = ..., state: _Optional[_Union[_common_pb2.TrackedState, str]] = ..., errors: _Optional[_Iterable[str]] = ...) -> None: ...

class ClusterInstKey(_message.Message):
    __slots__ = ("cluster_key", "cloudlet_key", "developer")
    CLUSTER_KEY_FIELD_NUMBER: _ClassVar[int]
    CLOUDLET_KEY_FIELD_NUMBER: _ClassVar[int]
    DEVELOPER_FIELD_NUMBER: _ClassVar[int]
    cluster_key: _cluster_pb2.ClusterKey
    cloudlet_key: _cloudlet_pb2.CloudletKey
    developer: str
    def __init__(self, cluster_key: _Optional[_Union[_cluster_pb2.ClusterKey, _Mapping]] = ..., cloudlet_key: _Optional[_Union[_cloudlet_pb2.CloudletKey, _Mapping]] = ..., developer: _Optional[str] = ...) -> None: ...
