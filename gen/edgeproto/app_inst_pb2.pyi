from ..distributed_match_engine import appcommon_pb2 as _appcommon_pb2
from ..distributed_match_engine import loc_pb2 as _loc_pb2
from ..edgeproto import app_pb2 as _app_pb2
from ..edgeproto import clusterinst_pb2 as _clusterinst_pb2
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

class AppInst(_message.Message):
    __slots__ = ("fields", "key", "cloudlet_loc", "uri", "liveness", "mapped_ports", "flavor", "state", "errors", "crm_override", "runtime_info", "created_at", "auto_cluster_ip_access")
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    CLOUDLET_LOC_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    LIVENESS_FIELD_NUMBER: _ClassVar[int]
    MAPPED_PORTS_FIELD_NUMBER: _ClassVar[int]
    FLAVOR_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    CRM_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_INFO_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    AUTO_CLUSTER_IP_ACCESS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    key: AppInstKey
    cloudlet_loc: _loc_pb2.Loc
    uri: str
    liveness: _common_pb2.Liveness
    mapped_ports: _containers.RepeatedCompositeFieldContainer[_appcommon_pb2.AppPort]
    flavor: _flavor_pb2.FlavorKey
    state: _common_pb2.TrackedState
    errors: _containers.RepeatedScalarFieldContainer[str]
    crm_override: _common_pb2.CRMOverride
    runtime_info: AppInstRuntime
    created_at: _loc_pb2.Timestamp
    auto_cluster_ip_access: _common_pb2.IpAccess
    def __init__(self, fields: _Optional[_Iterable[str]] = ..., key: _Optional[_Union[AppInstKey, _Mapping]] = ..., cloudlet_loc: _Optional[_Union[_loc_pb2.Loc, _Mapping]] = ..., uri: _Optional[str] = ..., liveness: _Optional[_Union[_common_pb2.Liveness, str]] = ..., mapped_ports: _Optional[_Iterable[_Union[_appcommon_pb2.AppPort, _Mapping]]] = ..., flavor: _Optional[_Union[_flavor_pb2.FlavorKey, _Mapping]] = ..., state: _Optional[_Union[_common_pb2.TrackedState, str]] = ..., errors: _Optional[_Iterable[str]] = ..., crm_override: _Optional[_Union[_common_pb2.CRMOverride, str]] = ..., runtime_info: _Optional[_Union[AppInstRuntime, _Mapping]] = ..., created_at: _Optional[_Union[_loc_pb2.Timestamp, _Mapping]] = ..., auto_cluster_ip_access: _Optional[_Union[_common_pb2.IpAccess, str]] = ...) -> None: ...

class AppInstInfo(_message.Message):
    __slots__ = ("fields", "key", "notify_id", "state", "errors", "runtime_info")
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    NOTIFY_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_INFO_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    key: AppInstKey
    notify_id: int
    state: _common_pb2.TrackedState
    errors: _containers.RepeatedScalarFieldContainer[str]
    runtime_info: AppInstRuntime
    def __init__(self, fields: _Optional[_Iterable[str]] = ..., key: _Optional[_Union[AppInstKey, _Mapping]] = ..., notify_id: _Optional[int] = ..., state: _Optional[_Union[_common_pb2.TrackedState, str]] = ..., errors: _Optional[_Iterable[str]] = ..., runtime_info: _Optional[_Union[AppInstRuntime, _Mapping]] = ...) -> None: ...

class AppInstKey(_message.Message):
    __slots__ = ("app_key", "cluster_inst_key")
    APP_KEY_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_INST_KEY_FIELD_NUMBER: _ClassVar[int]
    app_key: _app_pb2.AppKey
    cluster_inst_key: _clusterinst_pb2.ClusterInstKey
    def __init__(self, app_key: _Optional[_Union[_app_pb2.AppKey, _Mapping]] = ..., cluster_inst_key: _Optional[_Union[_clusterinst_pb2.ClusterInstKey, _Mapping]] = ...) -> None: ...

class AppInstMetrics(_message.Message):
    __slots__ = ("something",)
    SOMETHING_FIELD_NUMBER: _ClassVar[int]
    something: int
    def __init__(self, something: _Optional[int] = ...) -> None: ...

class AppInstRuntime(_message.Message):
    __slots__ = ("container_ids",)
    CONTAINER_IDS_FIELD_NUMBER: _ClassVar[int]
    container_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, container_ids: _Optional[_Iterable[str]] = ...) -> None: ...
