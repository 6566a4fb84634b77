from ..edgeproto import cluster_pb2 as _cluster_pb2
from ..edgeproto import developer_pb2 as _developer_pb2
from ..edgeproto import flavor_pb2 as _flavor_pb2
from ..edgeproto import result_pb2 as _result_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DeleteType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NO_AUTO_DELETE: _ClassVar[DeleteType]
    AUTO_DELETE: _ClassVar[DeleteType]

class ImageType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IMAGE_TYPE_UNKNOWN: _ClassVar[ImageType]
    IMAGE_TYPE_DOCKER: _ClassVar[ImageType]
    IMAGE_TYPE_QCOW: _ClassVar[ImageType]
NO_AUTO_DELETE: DeleteType
AUTO_DELETE: DeleteType
IMAGE_TYPE_UNKNOWN: ImageType
IMAGE_TYPE_DOCKER: ImageType
IMAGE_TYPE_QCOW: ImageType

class App(_message.Message):
    __slots__ = ("fields", "key", "image_path", "image_type", "access_ports", "config", "default_flavor", "cluster", "app_template", "auth_public_key", "command", "annotations", "deployment", "deployment_manifest", "deployment_generator", "android_package_name", "permits_platform_apps", "del_opt", "configs")
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    IMAGE_PATH_FIELD_NUMBER: _ClassVar[int]
    IMAGE_TYPE_FIELD_NUMBER: _ClassVar[int]
    ACCESS_PORTS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FLAVOR_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    APP_TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    AUTH_PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_MANIFEST_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_GENERATOR_FIELD_NUMBER: _ClassVar[int]
    ANDROID_PACKAGE_NAME_FIELD_NUMBER: _ClassVar[int]
    PERMITS_PLATFORM_APPS_FIELD_NUMBER: _ClassVar[int]
    DEL_OPT_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    key: AppKey
    image_path: str
    image_type: ImageType
    access_ports: str
    config: str
    default_flavor: _flavor_pb2.FlavorKey
    cluster: _cluster_pb2.ClusterKey
    app_template: str
    auth_public_key: str
    command: str
    annotations: str
    deployment: str
    deployment_manifest: str
    deployment_generator: str
    android_package_name: str
    permits_platform_apps: bool
    del_opt: DeleteType
    configs: _containers.RepeatedCompositeFieldContainer[ConfigFile]
    def __init__(self, fields: _Optional[_Iterable[str]] = ..., key: _Optional[_Union[AppKey, _Mapping]] = ..., image_path: _Optional[str] = ..., image_type: _Optional[_Union[ImageType, str]] = ..., access_ports: _Optional[str] = ..., config: _Optional[str] = ..., default_flavor: _Optional[_Union[_flavor_pb2.FlavorKey, _Mapping]] = ..., cluster: _Optional[_Union[_cluster_pb2.ClusterKey, _Mapping]] = ..., app_template: _Optional[str] = ..., auth_public_key: _Optional[str] = ..., command: _Optional[str] = ..., annotations: _Optional[str] = ..., deployment: _Optional[str] = ..., deployment_manifest: _Optional[str] = ..., deployment_generator: _Optional[str] = ..., android_package_name: _Optional[str] = ..., permits_platform_apps: _Optional[bool] = ..., del_opt: _Optional[_Union[DeleteType, str]] = ..., configs: _Optional[_Iterable[_Union[ConfigFile, _Mapping]]] = ...) -> None: ...

class AppKey(_message.Message):
    __slots__ = ("developer_key", "name", "version")
    DEVELOPER_KEY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    developer_key: _developer_pb2.DeveloperKey
    name: str
    version: str
    def __init__(self, developer_key: _Optional[_Union[_developer_pb2.DeveloperKey, _Mapping]] = ..., name: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class ConfigFile(_message.Message):
    __slots__ = ("kind", "config")
    KIND_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    kind: str
    config: str
    def __init__(self, kind: _Optional[str] = ..., config: _Optional[str] = ...) -> None: ...
