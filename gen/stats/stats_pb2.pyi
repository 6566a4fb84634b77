from google.api import annotations_pb2 as _annotations_pb2
from ..resources.stats import stats_pb2 as _stats_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetClusterNodesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetClusterNodesResponse(_message.Message):
    __slots__ = ("nodes",)
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[_stats_pb2.NodeInfo]
    def __init__(self, nodes: _Optional[_Iterable[_Union[_stats_pb2.NodeInfo, _Mapping]]] = ...) -> None: ...

class GetClusterRadarRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetClusterRadarResponse(_message.Message):
    __slots__ = ("radar",)
    RADAR_FIELD_NUMBER: _ClassVar[int]
    radar: _stats_pb2.ClusterRadar
    def __init__(self, radar: _Optional[_Union[_stats_pb2.ClusterRadar, _Mapping]] = ...) -> None: ...

class GetClusterResourcesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetClusterResourcesResponse(_message.Message):
    __slots__ = ("resources", "deployments")
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[_stats_pb2.ResourceInfo]
    deployments: _containers.RepeatedCompositeFieldContainer[_stats_pb2.ResourceInfo]
    def __init__(self, resources: _Optional[_Iterable[_Union[_stats_pb2.ResourceInfo, _Mapping]]] = ..., deployments: _Optional[_Iterable[_Union[_stats_pb2.ResourceInfo, _Mapping]]] = ...) -> None: ...

class GetClusterStatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetClusterStatsResponse(_message.Message):
    __slots__ = ("stats",)
    STATS_FIELD_NUMBER: _ClassVar[int]
    stats: _stats_pb2.ClusterStats
    def __init__(self, stats: _Optional[_Union[_stats_pb2.ClusterStats, _Mapping]] = ...) -> None: ...

class GetKoorClusterRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetKoorClusterResponse(_message.Message):
    __slots__ = ("koor_cluster",)
    KOOR_CLUSTER_FIELD_NUMBER: _ClassVar[int]
    koor_cluster: _stats_pb2.KoorCluster
    def __init__(self, koor_cluster: _Optional[_Union[_stats_pb2.KoorCluster, _Mapping]] = ...) -> None: ...
