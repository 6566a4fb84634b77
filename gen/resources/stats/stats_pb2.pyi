import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReliabilityScore(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RELIABILITY_UNKNOWN: _ClassVar[ReliabilityScore]
    RELIABILITY_NONE: _ClassVar[ReliabilityScore]
    RELIABILITY_DEGRADED: _ClassVar[ReliabilityScore]
    RELIABILITY_OK: _ClassVar[ReliabilityScore]

class ResourceStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESOURCE_UNKNOWN: _ClassVar[ResourceStatus]
    RESOURCE_READY: _ClassVar[ResourceStatus]
    RESOURCE_PROGRESSING: _ClassVar[ResourceStatus]
    RESOURCE_NOT_READY: _ClassVar[ResourceStatus]

class UpgradeMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UPGRADE_MODE_UNSPECIFIED: _ClassVar[UpgradeMode]
    UPGRADE_MODE_DISABLED: _ClassVar[UpgradeMode]
    UPGRADE_MODE_NOTIFY: _ClassVar[UpgradeMode]
    UPGRADE_MODE_UPGRADE: _ClassVar[UpgradeMode]
RELIABILITY_UNKNOWN: ReliabilityScore
RELIABILITY_NONE: ReliabilityScore
RELIABILITY_DEGRADED: ReliabilityScore
RELIABILITY_OK: ReliabilityScore
RESOURCE_UNKNOWN: ResourceStatus
RESOURCE_READY: ResourceStatus
RESOURCE_PROGRESSING: ResourceStatus
RESOURCE_NOT_READY: ResourceStatus
UPGRADE_MODE_UNSPECIFIED: UpgradeMode
UPGRADE_MODE_DISABLED: UpgradeMode
UPGRADE_MODE_NOTIFY: UpgradeMode
UPGRADE_MODE_UPGRADE: UpgradeMode

class ClusterRadar(_message.Message):
    __slots__ = ("cluster_health", "nodes_health", "capacity_available", "stability", "reliability")
    CLUSTER_HEALTH_FIELD_NUMBER: _ClassVar[int]
    NODES_HEALTH_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    STABILITY_FIELD_NUMBER: _ClassVar[int]
    RELIABILITY_FIELD_NUMBER: _ClassVar[int]
    cluster_health: float
    nodes_health: float
    capacity_available: float
    stability: float
    reliability: float
    def __init__(self, cluster_health: _Optional[float] = ..., nodes_health: _Optional[float] = ..., capacity_available: _Optional[float] = ..., stability: _Optional[float] = ..., reliability: _Optional[float] = ...) -> None: ...

class ClusterResources(_message.Message):
    __slots__ = ("nodes", "storage", "cpu", "memory")
    NODES_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    CPU_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    nodes: str
    storage: str
    cpu: str
    memory: str
    def __init__(self, nodes: _Optional[str] = ..., storage: _Optional[str] = ..., cpu: _Optional[str] = ..., memory: _Optional[str] = ...) -> None: ...

class ClusterStats(_message.Message):
    __slots__ = ("id", "status", "crashes", "services", "data", "test", "iops")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CRASHES_FIELD_NUMBER: _ClassVar[int]
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    TEST_FIELD_NUMBER: _ClassVar[int]
    IOPS_FIELD_NUMBER: _ClassVar[int]
    id: str
    status: str
    crashes: _containers.RepeatedCompositeFieldContainer[Crash]
    services: Services
    data: Data
    test: str
    iops: IOPS
    def __init__(self, id: _Optional[str] = ..., status: _Optional[str] = ..., crashes: _Optional[_Iterable[_Union[Crash, _Mapping]]] = ..., services: _Optional[_Union[Services, _Mapping]] = ..., data: _Optional[_Union[Data, _Mapping]] = ..., test: _Optional[str] = ..., iops: _Optional[_Union[IOPS, _Mapping]] = ...) -> None: ...

class Crash(_message.Message):
    __slots__ = ("description",)
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    description: str
    def __init__(self, description: _Optional[str] = ...) -> None: ...

class Data(_message.Message):
    __slots__ = ("volumes", "pools", "objects", "usage")
    VOLUMES_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    volumes: int
    pools: Pools
    objects: Objects
    usage: Usage
    def __init__(self, volumes: _Optional[int] = ..., pools: _Optional[_Union[Pools, _Mapping]] = ..., objects: _Optional[_Union[Objects, _Mapping]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ...) -> None: ...

class DetailedProductVersions(_message.Message):
    __slots__ = ("koor_operator", "ksd", "ceph")
    KOOR_OPERATOR_FIELD_NUMBER: _ClassVar[int]
    KSD_FIELD_NUMBER: _ClassVar[int]
    CEPH_FIELD_NUMBER: _ClassVar[int]
    koor_operator: DetailedVersion
    ksd: DetailedVersion
    ceph: DetailedVersion
    def __init__(self, koor_operator: _Optional[_Union[DetailedVersion, _Mapping]] = ..., ksd: _Optional[_Union[DetailedVersion, _Mapping]] = ..., ceph: _Optional[_Union[DetailedVersion, _Mapping]] = ...) -> None: ...

class DetailedVersion(_message.Message):
    __slots__ = ("version", "image_uri", "image_hash", "helm_repository", "helm_chart")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    IMAGE_URI_FIELD_NUMBER: _ClassVar[int]
    IMAGE_HASH_FIELD_NUMBER: _ClassVar[int]
    HELM_REPOSITORY_FIELD_NUMBER: _ClassVar[int]
    HELM_CHART_FIELD_NUMBER: _ClassVar[int]
    version: str
    image_uri: str
    image_hash: str
    helm_repository: str
    helm_chart: str
    def __init__(self, version: _Optional[str] = ..., image_uri: _Optional[str] = ..., image_hash: _Optional[str] = ..., helm_repository: _Optional[str] = ..., helm_chart: _Optional[str] = ...) -> None: ...

class IOPS(_message.Message):
    __slots__ = ("client_read", "client_write", "client_read_ops", "client_write_ops")
    CLIENT_READ_FIELD_NUMBER: _ClassVar[int]
    CLIENT_WRITE_FIELD_NUMBER: _ClassVar[int]
    CLIENT_READ_OPS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_WRITE_OPS_FIELD_NUMBER: _ClassVar[int]
    client_read: str
    client_write: str
    client_read_ops: str
    client_write_ops: str
    def __init__(self, client_read: _Optional[str] = ..., client_write: _Optional[str] = ..., client_read_ops: _Optional[str] = ..., client_write_ops: _Optional[str] = ...) -> None: ...

class KoorCluster(_message.Message):
    __slots__ = ("name", "namespace", "spec", "status")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    spec: KoorClusterSpec
    status: KoorClusterStatus
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., spec: _Optional[_Union[KoorClusterSpec, _Mapping]] = ..., status: _Optional[_Union[KoorClusterStatus, _Mapping]] = ...) -> None: ...

class KoorClusterSpec(_message.Message):
    __slots__ = ("use_all_devices", "monitoring_enabled", "dashboard_enabled", "toolbox_enabled", "upgrade_options", "ksd_release_name", "ksd_cluster_release_name")
    USE_ALL_DEVICES_FIELD_NUMBER: _ClassVar[int]
    MONITORING_ENABLED_FIELD_NUMBER: _ClassVar[int]
    DASHBOARD_ENABLED_FIELD_NUMBER: _ClassVar[int]
    TOOLBOX_ENABLED_FIELD_NUMBER: _ClassVar[int]
    UPGRADE_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    KSD_RELEASE_NAME_FIELD_NUMBER: _ClassVar[int]
    KSD_CLUSTER_RELEASE_NAME_FIELD_NUMBER: _ClassVar[int]
    use_all_devices: bool
    monitoring_enabled: bool
    dashboard_enabled: bool
    toolbox_enabled: bool
    upgrade_options: UpgradeOptions
    ksd_release_name: str
    ksd_cluster_release_name: str
    def __init__(self, use_all_devices: _Optional[bool] = ..., monitoring_enabled: _Optional[bool] = ..., dashboard_enabled: _Optional[bool] = ..., toolbox_enabled: _Optional[bool] = ..., upgrade_options: _Optional[_Union[UpgradeOptions, _Mapping]] = ..., ksd_release_name: _Optional[str] = ..., ksd_cluster_release_name: _Optional[str] = ...) -> None: ...

class KoorClusterStatus(_message.Message):
    __slots__ = ("total_resources", "meets_minimum_resources", "current_versions", "latest_versions")
    TOTAL_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    MEETS_MINIMUM_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    CURRENT_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    LATEST_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    total_resources: ClusterResources
    meets_minimum_resources: bool
    current_versions: ProductVersions
    latest_versions: DetailedProductVersions
    def __init__(self, total_resources: _Optional[_Union[ClusterResources, _Mapping]] = ..., meets_minimum_resources: _Optional[bool] = ..., current_versions: _Optional[_Union[ProductVersions, _Mapping]] = ..., latest_versions: _Optional[_Union[DetailedProductVersions, _Mapping]] = ...) -> None: ...

class MdsService(_message.Message):
    __slots__ = ("daemons_up", "hot_standby_count")
    DAEMONS_UP_FIELD_NUMBER: _ClassVar[int]
    HOT_STANDBY_COUNT_FIELD_NUMBER: _ClassVar[int]
    daemons_up: int
    hot_standby_count: int
    def __init__(self, daemons_up: _Optional[int] = ..., hot_standby_count: _Optional[int] = ...) -> None: ...

class MgrService(_message.Message):
    __slots__ = ("active", "standbys", "updated_at")
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    STANDBYS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    active: str
    standbys: _containers.RepeatedScalarFieldContainer[str]
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, active: _Optional[str] = ..., standbys: _Optional[_Iterable[str]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MonService(_message.Message):
    __slots__ = ("daemon_count", "quorum", "created_at", "updated_at")
    DAEMON_COUNT_FIELD_NUMBER: _ClassVar[int]
    QUORUM_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    daemon_count: int
    quorum: str
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, daemon_count: _Optional[int] = ..., quorum: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class NodeInfo(_message.Message):
    __slots__ = ("name", "status", "roles", "internal_ip", "external_ip", "age")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    INTERNAL_IP_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_IP_FIELD_NUMBER: _ClassVar[int]
    AGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    status: ResourceStatus
    roles: _containers.RepeatedScalarFieldContainer[str]
    internal_ip: str
    external_ip: str
    age: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., status: _Optional[_Union[ResourceStatus, str]] = ..., roles: _Optional[_Iterable[str]] = ..., internal_ip: _Optional[str] = ..., external_ip: _Optional[str] = ..., age: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Objects(_message.Message):
    __slots__ = ("object_count", "size")
    OBJECT_COUNT_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    object_count: int
    size: str
    def __init__(self, object_count: _Optional[int] = ..., size: _Optional[str] = ...) -> None: ...

class OsdService(_message.Message):
    __slots__ = ("osd_count", "osd_up", "osd_in", "osd_up_updated_at", "osd_in_updated_at")
    OSD_COUNT_FIELD_NUMBER: _ClassVar[int]
    OSD_UP_FIELD_NUMBER: _ClassVar[int]
    OSD_IN_FIELD_NUMBER: _ClassVar[int]
    OSD_UP_UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    OSD_IN_UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    osd_count: int
    osd_up: int
    osd_in: int
    osd_up_updated_at: _timestamp_pb2.Timestamp
    osd_in_updated_at: _timestamp_pb2.Timestamp
    def __init__(self, osd_count: _Optional[int] = ..., osd_up: _Optional[int] = ..., osd_in: _Optional[int] = ..., osd_up_updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., osd_in_updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PGs(_message.Message):
    __slots__ = ("active_clean",)
    ACTIVE_CLEAN_FIELD_NUMBER: _ClassVar[int]
    active_clean: int
    def __init__(self, active_clean: _Optional[int] = ...) -> None: ...

class Pools(_message.Message):
    __slots__ = ("pools", "pgs")
    POOLS_FIELD_NUMBER: _ClassVar[int]
    PGS_FIELD_NUMBER: _ClassVar[int]
    pools: int
    pgs: PGs
    def __init__(self, pools: _Optional[int] = ..., pgs: _Optional[_Union[PGs, _Mapping]] = ...) -> None: ...

class ProductVersions(_message.Message):
    __slots__ = ("kube", "koor_operator", "ksd", "ceph")
    KUBE_FIELD_NUMBER: _ClassVar[int]
    KOOR_OPERATOR_FIELD_NUMBER: _ClassVar[int]
    KSD_FIELD_NUMBER: _ClassVar[int]
    CEPH_FIELD_NUMBER: _ClassVar[int]
    kube: str
    koor_operator: str
    ksd: str
    ceph: str
    def __init__(self, kube: _Optional[str] = ..., koor_operator: _Optional[str] = ..., ksd: _Optional[str] = ..., ceph: _Optional[str] = ...) -> None: ...

class ResourceInfo(_message.Message):
    __slots__ = ("apiversion", "kind", "namespace", "name", "status", "replicas", "reliability")
    APIVERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    RELIABILITY_FIELD_NUMBER: _ClassVar[int]
    apiversion: str
    kind: str
    namespace: str
    name: str
    status: ResourceStatus
    replicas: int
    reliability: ReliabilityScore
    def __init__(self, apiversion: _Optional[str] = ..., kind: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., status: _Optional[_Union[ResourceStatus, str]] = ..., replicas: _Optional[int] = ..., reliability: _Optional[_Union[ReliabilityScore, str]] = ...) -> None: ...

class RgwService(_message.Message):
    __slots__ = ("active_daemon", "host_count", "zone_count")
    ACTIVE_DAEMON_FIELD_NUMBER: _ClassVar[int]
    HOST_COUNT_FIELD_NUMBER: _ClassVar[int]
    ZONE_COUNT_FIELD_NUMBER: _ClassVar[int]
    active_daemon: int
    host_count: int
    zone_count: int
    def __init__(self, active_daemon: _Optional[int] = ..., host_count: _Optional[int] = ..., zone_count: _Optional[int] = ...) -> None: ...

class Services(_message.Message):
    __slots__ = ("mon", "mgr", "mds", "osd", "rgw")
    MON_FIELD_NUMBER: _ClassVar[int]
    MGR_FIELD_NUMBER: _ClassVar[int]
    MDS_FIELD_NUMBER: _ClassVar[int]
    OSD_FIELD_NUMBER: _ClassVar[int]
    RGW_FIELD_NUMBER: _ClassVar[int]
    mon: MonService
    mgr: MgrService
    mds: MdsService
    osd: OsdService
    rgw: RgwService
    def __init__(self, mon: _Optional[_Union[MonService, _Mapping]] = ..., mgr: _Optional[_Union[MgrService, _Mapping]] = ..., mds: _Optional[_Union[MdsService, _Mapping]] = ..., osd: _Optional[_Union[OsdService, _Mapping]] = ..., rgw: _Optional[_Union[RgwService, _Mapping]] = ...) -> None: ...

class UpgradeOptions(_message.Message):
    __slots__ = ("mode", "endpoint", "schedule")
    MODE_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    mode: UpgradeMode
    endpoint: str
    schedule: str
    def __init__(self, mode: _Optional[_Union[UpgradeMode, str]] = ..., endpoint: _Optional[str] = ..., schedule: _Optional[str] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("used", "available", "total")
    USED_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    used: int
    available: int
    total: int
    def __init__(self, used: _Optional[int] = ..., available: _Optional[int] = ..., total: _Optional[int] = ...) -> None: ...
