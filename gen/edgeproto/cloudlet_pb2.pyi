from ..distributed_match_engine import loc_pb2 as _loc_pb2
from ..edgeproto import common_pb2 as _common_pb2
from ..edgeproto import operator_pb2 as _operator_pb2
from ..edgeproto import result_pb2 as _result_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CloudletState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CLOUDLET_STATE_UNKNOWN: _ClassVar[CloudletState]
    CLOUDLET_STATE_ERRORS: _ClassVar[CloudletState]
    CLOUDLET_STATE_READY: _ClassVar[CloudletState]
    CLOUDLET_STATE_OFFLINE: _ClassVar[CloudletState]
    CLOUDLET_STATE_NOT_PRESENT: _ClassVar[CloudletState]
CLOUDLET_STATE_UNKNOWN: CloudletState
CLOUDLET_STATE_ERRORS: CloudletState
CLOUDLET_STATE_READY: CloudletState
CLOUDLET_STATE_OFFLINE: CloudletState
CLOUDLET_STATE_NOT_PRESENT: CloudletState

class AzureProperties(_message.Message):
    __slots__ = ("location", "resource_group", "user_name", "password")
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_GROUP_FIELD_NUMBER: _ClassVar[int]
    USER_NAME_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    location: str
    resource_group: str
    user_name: str
    password: str
    def __init__(self, location: _Optional[str] = ..., resource_group: _Optional[str] = ..., user_name: _Optional[str] = ..., password: _Optional[str] = ...) -> None: ...

class Cloudlet(_message.Message):
    __slots__ = ("fields", "key", "access_uri", "location", "ip_support", "static_ips", "num_dynamic_ips")
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    ACCESS_URI_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    IP_SUPPORT_FIELD_NUMBER: _ClassVar[int]
    STATIC_IPS_FIELD_NUMBER: _ClassVar[int]
    NUM_DYNAMIC_IPS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    key: CloudletKey
    access_uri: str
    location: _loc_pb2.Loc
    ip_support: _common_pb2.IpSupport
    static_ips: str
    num_dynamic_ips: int
    def __init__(self, fields: _Optional[_Iterable[str]] = ..., key: _Optional[_Union[CloudletKey, _Mapping]] = ..., access_uri: _Optional[str] = ..., location: _Optional[_Union[_loc_pb2.Loc, _Mapping]] = ..., ip_support: _Optional[_Union[_common_pb2.IpSupport, str]] = ..., static_ips: _Optional[str] = ..., num_dynamic_ips: _Optional[int] = ...) -> None: ...

class CloudletInfo(_message.Message):
    __slots__ = ("fields", "key", "state", "notify_id", "controller", "os_max_ram", "os_max_vcores", "os_max_vol_gb", "errors", "flavors")
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    NOTIFY_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    OS_MAX_RAM_FIELD_NUMBER: _ClassVar[int]
    OS_MAX_VCORES_FIELD_NUMBER: _ClassVar[int]
    OS_MAX_VOL_GB_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    FLAVORS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    key: CloudletKey
    state: CloudletState
    notify_id: int
    controller: str
    os_max_ram: int
    os_max_vcores: int
    os_max_vol_gb: int
    errors: _containers.RepeatedScalarFieldContainer[str]
    flavors: _containers.RepeatedCompositeFieldContainer[FlavorInfo]
    def __init__(self, fields: _Optional[_Iterable[str]] = ..., key: _Optional[_Union[CloudletKey, _Mapping]] = ..., state: _Optional[_Union[CloudletState, str]] = ..., notify_id: _Optional[int] = ..., controller: _Optional[str] = ..., os_max_ram: _Optional[int] = ..., os_max_vcores: _Optional[int] = ..., os_max_vol_gb: _Optional[int] = ..., errors: _Optional[_Iterable[str]] = ..., flavors: _Optional[_Iterable[_Union[FlavorInfo, _Mapping]]] = ...) -> None: ...

class CloudletInfraCommon(_message.Message):
    __slots__ = ("docker_registry", "dns_zone", "registry_file_server", "cf_key", "cf_user", "docker_reg_pass", "network_scheme", "docker_registry_secret")
    DOCKER_REGISTRY_FIELD_NUMBER: _ClassVar[int]
    DNS_ZONE_FIELD_NUMBER: _ClassVar[int]
    REGISTRY_FILE_SERVER_FIELD_NUMBER: _ClassVar[int]
    CF_KEY_FIELD_NUMBER: _ClassVar[int]
    CF_USER_FIELD_NUMBER: _ClassVar[int]
    DOCKER_REG_PASS_FIELD_NUMBER: _ClassVar[int]
    NETWORK_SCHEME_FIELD_NUMBER: _ClassVar[int]
    DOCKER_REGISTRY_SECRET_FIELD_NUMBER: _ClassVar[int]
    docker_registry: str
    dns_zone: str
    registry_file_server: str
    cf_key: str
    cf_user: str
    docker_reg_pass: str
    network_scheme: str
    docker_registry_secret: str
    def __init__(self, docker_registry: _Optional[str] = ..., dns_zone: _Optional[str] = ..., registry_file_server: _Optional[str] = ..., cf_key: _Optional[str] = ..., cf_user: _Optional[str] = ..., docker_reg_pass: _Optional[str] = ..., network_scheme: _Optional[str] = ..., docker_registry_secret: _Optional[str] = ...) -> None: ...

class CloudletInfraProperties(_message.Message):
    __slots__ = ("cloudlet_kind", "mexos_container_image_name", "openstack_properties", "azure_properties", "gcp_properties")
    CLOUDLET_KIND_FIELD_NUMBER: _ClassVar[int]
    MEXOS_CONTAINER_IMAGE_NAME_FIELD_NUMBER: _ClassVar[int]
    OPENSTACK_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    AZURE_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    GCP_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    cloudlet_kind: str
    mexos_container_image_name: str
    openstack_properties: OpenStackProperties
    azure_properties: AzureProperties
    gcp_properties: GcpProperties
    def __init__(self, cloudlet_kind: _Optional[str] = ..., mexos_container_image_name: _Optional[str] = ..., openstack_properties: _Optional[_Union[OpenStackProperties, _Mapping]] = ..., azure_properties: _Optional[_Union[AzureProperties, _Mapping]] = ..., gcp_properties: _Optional[_Union[GcpProperties, _Mapping]] = ...) -> None: ...

class CloudletKey(_message.Message):
    __slots__ = ("operator_key", "name")
    OPERATOR_KEY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    operator_key: _operator_pb2.OperatorKey
    name: str
    def __init__(self, operator_key: _Optional[_Union[_operator_pb2.OperatorKey, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class CloudletMetrics(_message.Message):
    __slots__ = ("foo",)
    FOO_FIELD_NUMBER: _ClassVar[int]
    foo: int
    def __init__(self, foo: _Optional[int] = ...) -> None: ...

class FlavorInfo(_message.Message):
    __slots__ = ("name", "vcpus", "ram", "disk")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VCPUS_FIELD_NUMBER: _ClassVar[int]
    RAM_FIELD_NUMBER: _ClassVar[int]
    DISK_FIELD_NUMBER: _ClassVar[int]
    name: str
    vcpus: int
    ram: int
    disk: int
    def __init__(self, name: _Optional[str] = ..., vcpus: _Optional[int] = ..., ram: _Optional[int] = ..., disk: _Optional[int] = ...) -> None: ...

class GcpProperties(_message.Message):
    __slots__ = ("project", "zone", "service_account", "gcp_auth_key_url")
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    GCP_AUTH_KEY_URL_FIELD_NUMBER: _ClassVar[int]
    project: str
    zone: str
    service_account: str
    gcp_auth_key_url: str
    def __init__(self, project: _Optional[str] = ..., zone: _Optional[str] = ..., service_account: _Optional[str] = ..., gcp_auth_key_url: _Optional[str] = ...) -> None: ...

class OpenStackProperties(_message.Message):
    __slots__ = ("os_external_network_name", "os_image_name", "os_external_router_name", "os_mex_network", "open_rc_vars")
    class OpenRcVarsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    OS_EXTERNAL_NETWORK_NAME_FIELD_NUMBER: _ClassVar[int]
    OS_IMAGE_NAME_FIELD_NUMBER: _ClassVar[int]
    OS_EXTERNAL_ROUTER_NAME_FIELD_NUMBER: _ClassVar[int]
    OS_MEX_NETWORK_FIELD_NUMBER: _ClassVar[int]
    OPEN_RC_VARS_FIELD_NUMBER: _ClassVar[int]
    os_external_network_name: str
    os_image_name: str
    os_external_router_name: str
    os_mex_network: str
    open_rc_vars: _containers.ScalarMap[str, str]
    def __init__(self, os_external_network_name: _Optional[str] = ..., os_image_name: _Optional[str] = ..., os_external_router_name: _Optional[str] = ..., os_mex_network: _Optional[str] = ..., open_rc_vars: _Optional[_Mapping[str, str]] = ...) -> None: ...
