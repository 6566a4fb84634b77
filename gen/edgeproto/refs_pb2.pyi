from ..edgeproto import app_pb2 as _app_pb2
from ..edgeproto import cloudlet_pb2 as _cloudlet_pb2
from ..edgeproto import cluster_pb2 as _cluster_pb2
from ..edgeproto import clusterinst_pb2 as _clusterinst_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CloudletRefs(_message.Message):
    __slots__ = ("key", "clusters", "used_ram", "used_vcores", "used_disk", "root_lb_ports", "used_dynamic_ips", "used_static_ips")
    class RootLbPortsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: int
        def __init__(self, key: _Optional[int] = ..., value: _Optional[int] = ...) -> None: ...
    KEY_FIELD_NUMBER: _ClassVar[int]
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    USED_RAM_FIELD_NUMBER: _ClassVar[int]
    USED_VCORES_FIELD_NUMBER: _ClassVar[int]
    USED_DISK_FIELD_NUMBER: _ClassVar[int]
    ROOT_LB_PORTS_FIELD_NUMBER: _ClassVar[int]
    USED_DYNAMIC_IPS_FIELD_NUMBER: _ClassVar[int]
    USED_STATIC_IPS_FIELD_NUMBER: _ClassVar[int]
    key: _cloudlet_pb2.CloudletKey
    clusters: _containers.RepeatedCompositeFieldContainer[_cluster_pb2.ClusterKey]
    used_ram: int
    used_vcores: int
    used_disk: int
    root_lb_ports: _containers.ScalarMap[int, int]
    used_dynamic_ips: int
    used_static_ips: str
    def __init__(self, key: _Optional[_Union[_cloudlet_pb2.CloudletKey, _Mapping]] = ..., clusters: _Optional[_Iterable[_Union[_cluster_pb2.ClusterKey, _Mapping]]] = ..., used_ram: _Optional[int] = ..., used_vcores: _Optional[int] = ..., used_disk: _Optional[int] = ..., root_lb_ports: _Optional[_Mapping[int, int]] = ..., used_dynamic_ips: _Optional[int] = ..., used_static_ips: _Optional[str] = ...) -> None: ...

class ClusterRefs(_message.Message):
    __slots__ = ("key", "apps", "used_ram", "used_vcores", "used_disk")
    KEY_FIELD_NUMBER: _ClassVar[int]
    APPS_FIELD_NUMBER: _ClassVar[int]
    USED_RAM_FIELD_NUMBER: _ClassVar[int]
    USED_VCORES_FIELD_NUMBER: _ClassVar[int]
    USED_DISK_FIELD_NUMBER: _ClassVar[int]
    key: _clusterinst_pb2.ClusterInstKey
    apps: _containers.RepeatedCompositeFieldContainer[_app_pb2.AppKey]
    used_ram: int
    used_vcores: int
    used_disk: int
    def __init__(self, key: _Optional[_Union[_clusterinst_pb2.ClusterInstKey, _Mapping]] = ..., apps: _Optional[_Iterable[_Union[_app_pb2.AppKey, _Mapping]]] = ..., used_ram: _Optional[int] = ..., used_vcores: _Optional[int] = ..., used_disk: _Optional[int] = ...) -> None: ...
