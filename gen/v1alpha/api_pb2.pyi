from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AppState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APP_STATE_UNDEFINED: _ClassVar[AppState]
    APP_STATE_RUNNING: _ClassVar[AppState]
    APP_STATE_EXITED: _ClassVar[AppState]

class EventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_TYPE_UNDEFINED: _ClassVar[EventType]
    EVENT_TYPE_POD_PREPARED: _ClassVar[EventType]
    EVENT_TYPE_POD_PREPARE_ABORTED: _ClassVar[EventType]
    EVENT_TYPE_POD_STARTED: _ClassVar[EventType]
    EVENT_TYPE_POD_EXITED: _ClassVar[EventType]
    EVENT_TYPE_POD_GARBAGE_COLLECTED: _ClassVar[EventType]
    EVENT_TYPE_APP_STARTED: _ClassVar[EventType]
    EVENT_TYPE_APP_EXITED: _ClassVar[EventType]
    EVENT_TYPE_IMAGE_IMPORTED: _ClassVar[EventType]
    EVENT_TYPE_IMAGE_REMOVED: _ClassVar[EventType]

class ImageType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IMAGE_TYPE_UNDEFINED: _ClassVar[ImageType]
    IMAGE_TYPE_APPC: _ClassVar[ImageType]
    IMAGE_TYPE_DOCKER: _ClassVar[ImageType]
    IMAGE_TYPE_OCI: _ClassVar[ImageType]

class PodState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    POD_STATE_UNDEFINED: _ClassVar[PodState]
    POD_STATE_EMBRYO: _ClassVar[PodState]
    POD_STATE_PREPARING: _ClassVar[PodState]
    POD_STATE_PREPARED: _ClassVar[PodState]
    POD_STATE_RUNNING: _ClassVar[PodState]
    POD_STATE_ABORTED_PREPARE: _ClassVar[PodState]
    POD_STATE_EXITED: _ClassVar[PodState]
    POD_STATE_DELETING: _ClassVar[PodState]
    POD_STATE_GARBAGE: _ClassVar[PodState]
APP_STATE_UNDEFINED: AppState
APP_STATE_RUNNING: AppState
APP_STATE_EXITED: AppState
EVENT_TYPE_UNDEFINED: EventType
EVENT_TYPE_POD_PREPARED: EventType
EVENT_TYPE_POD_PREPARE_ABORTED: EventType
EVENT_TYPE_POD_STARTED: EventType
EVENT_TYPE_POD_EXITED: EventType
EVENT_TYPE_POD_GARBAGE_COLLECTED: EventType
EVENT_TYPE_APP_STARTED: EventType
EVENT_TYPE_APP_EXITED: EventType
EVENT_TYPE_IMAGE_IMPORTED: EventType
EVENT_TYPE_IMAGE_REMOVED: EventType
IMAGE_TYPE_UNDEFINED: ImageType
IMAGE_TYPE_APPC: ImageType
IMAGE_TYPE_DOCKER: ImageType
IMAGE_TYPE_OCI: ImageType
POD_STATE_UNDEFINED: PodState
POD_STATE_EMBRYO: PodState
POD_STATE_PREPARING: PodState
POD_STATE_PREPARED: PodState
POD_STATE_RUNNING: PodState
POD_STATE_ABORTED_PREPARE: PodState
POD_STATE_EXITED: PodState
POD_STATE_DELETING: PodState
POD_STATE_GARBAGE: PodState

class App(_message.Message):
    __slots__ = ("name", "image", "state", "exit_code", "annotations")
    NAME_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    image: Image
    state: AppState
    exit_code: int
    annotations: _containers.RepeatedCompositeFieldContainer[KeyValue]
    def __init__(self, name: _Optional[str] = ..., image: _Optional[_Union[Image, _Mapping]] = ..., state: _Optional[_Union[AppState, str]] = ..., exit_code: _Optional[int] = ..., annotations: _Optional[_Iterable[_Union[KeyValue, _Mapping]]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("type", "id", "time", "data")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    type: EventType
    id: str
    time: int
    data: _containers.RepeatedCompositeFieldContainer[KeyValue]
    def __init__(self, type: _Optional[_Union[EventType, str]] = ..., id: _Optional[str] = ..., time: _Optional[int] = ..., data: _Optional[_Iterable[_Union[KeyValue, _Mapping]]] = ..., **kwargs) -> None: ...

class EventFilter(_message.Message):
    __slots__ = ("types", "ids", "names", "since_time", "until_time")
    TYPES_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    SINCE_TIME_FIELD_NUMBER: _ClassVar[int]
    UNTIL_TIME_FIELD_NUMBER: _ClassVar[int]
    types: _containers.RepeatedScalarFieldContainer[EventType]
    ids: _containers.RepeatedScalarFieldContainer[str]
    names: _containers.RepeatedScalarFieldContainer[str]
    since_time: int
    until_time: int
    def __init__(self, types: _Optional[_Iterable[_Union[EventType, str]]] = ..., ids: _Optional[_Iterable[str]] = ..., names: _Optional[_Iterable[str]] = ..., since_time: _Optional[int] = ..., until_time: _Optional[int] = ...) -> None: ...

class GetInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetInfoResponse(_message.Message):
    __slots__ = ("info",)
    INFO_FIELD_NUMBER: _ClassVar[int]
    info: Info
    def __init__(self, info: _Optional[_Union[Info, _Mapping]] = ...) -> None: ...

class GetLogsRequest(_message.Message):
    __slots__ = ("pod_id", "app_name", "lines", "follow", "since_time", "until_time")
    POD_ID_FIELD_NUMBER: _ClassVar[int]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    SINCE_TIME_FIELD_NUMBER: _ClassVar[int]
    UNTIL_TIME_FIELD_NUMBER: _ClassVar[int]
    pod_id: str
    app_name: str
    lines: int
    follow: bool
    since_time: int
    until_time: int
    def __init__(self, pod_id: _Optional[str] = ..., app_name: _Optional[str] = ..., lines: _Optional[int] = ..., follow: _Optional[bool] = ..., since_time: _Optional[int] = ..., until_time: _Optional[int] = ...) -> None: ...

class GetLogsResponse(_message.Message):
    __slots__ = ("lines",)
    LINES_FIELD_NUMBER: _ClassVar[int]
    lines: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, lines: _Optional[_Iterable[str]] = ...) -> None: ...

class GlobalFlags(_message.Message):
    __slots__ = ("dir", "system_config_dir", "local_config_dir", "user_config_dir", "insecure_flags", "trust_keys_from_https")
    DIR_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_CONFIG_DIR_FIELD_NUMBER: _ClassVar[int]
    LOCAL_CONFIG_DIR_FIELD_NUMBER: _ClassVar[int]
    USER_CONFIG_DIR_FIELD_NUMBER: _ClassVar[int]
    INSECURE_FLAGS_FIELD_NUMBER: _ClassVar[int]
    TRUST_KEYS_FROM_HTTPS_FIELD_NUMBER: _ClassVar[int]
    dir: str
    system_config_dir: str
    local_config_dir: str
    user_config_dir: str
    insecure_flags: str
    trust_keys_from_https: bool
    def __init__(self, dir: _Optional[str] = ..., system_config_dir: _Optional[str] = ..., local_config_dir: _Optional[str] = ..., user_config_dir: _Optional[str] = ..., insecure_flags: _Optional[str] = ..., trust_keys_from_https: _Optional[bool] = ...) -> None: ...

class Image(_message.Message):
    __slots__ = ("base_format", "id", "name", "version", "import_timestamp", "manifest", "size", "annotations", "labels")
    BASE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    IMPORT_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    base_format: ImageFormat
    id: str
    name: str
    version: str
    import_timestamp: int
    manifest: bytes
    size: int
    annotations: _containers.RepeatedCompositeFieldContainer[KeyValue]
    labels: _containers.RepeatedCompositeFieldContainer[KeyValue]
    def __init__(self, base_format: _Optional[_Union[ImageFormat, _Mapping]] = ..., id: _Optional[str] = ..., name: _Optional[str] = ..., version: _Optional[str] = ..., import_timestamp: _Optional[int] = ..., manifest: _Optional[bytes] = ..., size: _Optional[int] = ..., annotations: _Optional[_Iterable[_Union[KeyValue, _Mapping]]] = ..., labels: _Optional[_Iterable[_Union[KeyValue, _Mapping]]] = ...) -> None: ...

class ImageFilter(_message.Message):
    __slots__ = ("ids", "prefixes", "base_names", "keywords", "labels", "imported_after", "imported_before", "annotations", "full_names")
    IDS_FIELD_NUMBER: _ClassVar[int]
    PREFIXES_FIELD_NUMBER: _ClassVar[int]
    BASE_NAMES_FIELD_NUMBER: _ClassVar[int]
    KEYWORDS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    IMPORTED_AFTER_FIELD_NUMBER: _ClassVar[int]
    IMPORTED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    FULL_NAMES_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    prefixes: _containers.RepeatedScalarFieldContainer[str]
    base_names: _containers.RepeatedScalarFieldContainer[str]
    keywords: _containers.RepeatedScalarFieldContainer[str]
    labels: _containers.RepeatedCompositeFieldContainer[KeyValue]
    imported_after: int
    imported_before: int
    annotations: _containers.RepeatedCompositeFieldContainer[KeyValue]
    full_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ids: _Optional[_Iterable[str]] = ..., prefixes: _Optional[_Iterable[str]] = ..., base_names: _Optional[_Iterable[str]] = ..., keywords: _Optional[_Iterable[str]] = ..., labels: _Optional[_Iterable[_Union[KeyValue, _Mapping]]] = ..., imported_after: _Optional[int] = ..., imported_before: _Optional[int] = ..., annotations: _Optional[_Iterable[_Union[KeyValue, _Mapping]]] = ..., full_names: _Optional[_Iterable[str]] = ...) -> None: ...

class ImageFormat(_message.Message):
    __slots__ = ("type", "version")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    type: ImageType
    version: str
    def __init__(self, type: _Optional[_Union[ImageType, str]] = ..., version: _Optional[str] = ...) -> None: ...

class Info(_message.Message):
    __slots__ = ("rkt_version", "appc_version", "api_version", "global_flags")
    RKT_VERSION_FIELD_NUMBER: _ClassVar[int]
    APPC_VERSION_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_FLAGS_FIELD_NUMBER: _ClassVar[int]
    rkt_version: str
    appc_version: str
    api_version: str
    global_flags: GlobalFlags
    def __init__(self, rkt_version: _Optional[str] = ..., appc_version: _Optional[str] = ..., api_version: _Optional[str] = ..., global_flags: _Optional[_Union[GlobalFlags, _Mapping]] = ...) -> None: ...

class InspectImageRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class InspectImageResponse(_message.Message):
    __slots__ = ("image",)
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    image: Image
    def __init__(self, image: _Optional[_Union[Image, _Mapping]] = ...) -> None: ...

class InspectPodRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class InspectPodResponse(_message.Message):
    __slots__ = ("pod",)
    POD_FIELD_NUMBER: _ClassVar[int]
    pod: Pod
    def __init__(self, pod: _Optional[_Union[Pod, _Mapping]] = ...) -> None: ...

class KeyValue(_message.Message):
    __slots__ = ("Key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    Key: str
    value: str
    def __init__(self, Key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class ListImagesRequest(_message.Message):
    __slots__ = ("filters", "detail")
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    filters: _containers.RepeatedCompositeFieldContainer[ImageFilter]
    detail: bool
    def __init__(self, filters: _Optional[_Iterable[_Union[ImageFilter, _Mapping]]] = ..., detail: _Optional[bool] = ...) -> None: ...

class ListImagesResponse(_message.Message):
    __slots__ = ("images",)
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    images: _containers.RepeatedCompositeFieldContainer[Image]
    def __init__(self, images: _Optional[_Iterable[_Union[Image, _Mapping]]] = ...) -> None: ...

class ListPodsRequest(_message.Message):
    __slots__ = ("filters", "detail")
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    filters: _containers.RepeatedCompositeFieldContainer[PodFilter]
    detail: bool
    def __init__(self, filters: _Optional[_Iterable[_Union[PodFilter, _Mapping]]] = ..., detail: _Optional[bool] = ...) -> None: ...

class ListPodsResponse(_message.Message):
    __slots__ = ("pods",)
    PODS_FIELD_NUMBER: _ClassVar[int]
    pods: _containers.RepeatedCompositeFieldContainer[Pod]
    def __init__(self, pods: _Optional[_Iterable[_Union[Pod, _Mapping]]] = ...) -> None: ...

class ListenEventsRequest(_message.Message):
    __slots__ = ("filter",)
    FILTER_FIELD_NUMBER: _ClassVar[int]
    filter: EventFilter
    def __init__(self, filter: _Optional[_Union[EventFilter, _Mapping]] = ...) -> None: ...

class ListenEventsResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...

class Network(_message.Message):
    __slots__ = ("name", "ipv4", "ipv6")
    NAME_FIELD_NUMBER: _ClassVar[int]
    IPV4_FIELD_NUMBER: _ClassVar[int]
    IPV6_FIELD_NUMBER: _ClassVar[int]
    name: str
    ipv4: str
    ipv6: str
    def __init__(self, name: _Optional[str] = ..., ipv4: _Optional[str] = ..., ipv6: _Optional[str] = ...) -> None: ...

class Pod(_message.Message):
    __slots__ = ("id", "pid", "state", "apps", "networks", "manifest", "annotations", "cgroup", "created_at", "started_at", "gc_marked_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    APPS_FIELD_NUMBER: _ClassVar[int]
    NETWORKS_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    CGROUP_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    GC_MARKED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    pid: int
    state: PodState
    apps: _containers.RepeatedCompositeFieldContainer[App]
    networks: _containers.RepeatedCompositeFieldContainer[Network]
    manifest: bytes
    annotations: _containers.RepeatedCompositeFieldContainer[KeyValue]
    cgroup: str
    created_at: int
    started_at: int
    gc_marked_at: int
    def __init__(self, id: _Optional[str] = ..., pid: _Optional[int] = ..., state: _Optional[_Union[PodState, str]] = ..., apps: _Optional[_Iterable[_Union[App, _Mapping]]] = ..., networks: _Optional[_Iterable[_Union[Network, _Mapping]]] = ..., manifest: _Optional[bytes] = ..., annotations: _Optional[_Iterable[_Union[KeyValue, _Mapping]]] = ..., cgroup: _Optional[str] = ..., created_at: _Optional[int] = ..., started_at: _Optional[int] = ..., gc_marked_at: _Optional[int] = ...) -> None: ...

class PodFilter(_message.Message):
    __slots__ = ("ids", "states", "app_names", "image_ids", "network_names", "annotations", "cgroups", "pod_sub_cgroups")
    IDS_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    APP_NAMES_FIELD_NUMBER: _ClassVar[int]
    IMAGE_IDS_FIELD_NUMBER: _ClassVar[int]
    NETWORK_NAMES_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    CGROUPS_FIELD_NUMBER: _ClassVar[int]
    POD_SUB_CGROUPS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    states: _containers.RepeatedScalarFieldContainer[PodState]
    app_names: _containers.RepeatedScalarFieldContainer[str]
    image_ids: _containers.RepeatedScalarFieldContainer[str]
    network_names: _containers.RepeatedScalarFieldContainer[str]
    annotations: _containers.RepeatedCompositeFieldContainer[KeyValue]
    cgroups: _containers.RepeatedScalarFieldContainer[str]
    pod_sub_cgroups: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ids: _Optional[_Iterable[str]] = ..., states: _Optional[_Iterable[_Union[PodState, str]]] = ..., app_names: _Optional[_Iterable[str]] = ..., image_ids: _Optional[_Iterable[str]] = ..., network_names: _Optional[_Iterable[str]] = ..., annotations: _Optional[_Iterable[_Union[KeyValue, _Mapping]]] = ..., cgroups: _Optional[_Iterable[str]] = ..., pod_sub_cgroups: _Optional[_Iterable[str]] = ...) -> None: ...
