from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ClusterStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STATUS_UNSPECIFIED: _ClassVar[ClusterStatus]
    PROVISIONING: _ClassVar[ClusterStatus]
    RUNNING: _ClassVar[ClusterStatus]
    RECONCILING: _ClassVar[ClusterStatus]
    STOPPING: _ClassVar[ClusterStatus]
    ERROR: _ClassVar[ClusterStatus]
    DEGRADED: _ClassVar[ClusterStatus]
STATUS_UNSPECIFIED: ClusterStatus
PROVISIONING: ClusterStatus
RUNNING: ClusterStatus
RECONCILING: ClusterStatus
STOPPING: ClusterStatus
ERROR: ClusterStatus
DEGRADED: ClusterStatus

class AddNodePoolMsg(_message.Message):
    __slots__ = ("clusterName", "worker_node_pools")
    CLUSTERNAME_FIELD_NUMBER: _ClassVar[int]
    WORKER_NODE_POOLS_FIELD_NUMBER: _ClassVar[int]
    clusterName: str
    worker_node_pools: _containers.RepeatedCompositeFieldContainer[MachineSpec]
    def __init__(self, clusterName: _Optional[str] = ..., worker_node_pools: _Optional[_Iterable[_Union[MachineSpec, _Mapping]]] = ...) -> None: ...

class AddNodePoolReply(_message.Message):
    __slots__ = ("ok",)
    OK_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    def __init__(self, ok: _Optional[bool] = ...) -> None: ...

class ClusterDetailItem(_message.Message):
    __slots__ = ("name", "status_message", "kubeconfig", "status")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    KUBECONFIG_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    name: str
    status_message: str
    kubeconfig: str
    status: ClusterStatus
    def __init__(self, name: _Optional[str] = ..., status_message: _Optional[str] = ..., kubeconfig: _Optional[str] = ..., status: _Optional[_Union[ClusterStatus, str]] = ...) -> None: ...

class ClusterItem(_message.Message):
    __slots__ = ("name", "status_message", "status")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    name: str
    status_message: str
    status: ClusterStatus
    def __init__(self, name: _Optional[str] = ..., status_message: _Optional[str] = ..., status: _Optional[_Union[ClusterStatus, str]] = ...) -> None: ...

class ControlPlaneMachineSpec(_message.Message):
    __slots__ = ("labels", "instanceType", "count")
    LABELS_FIELD_NUMBER: _ClassVar[int]
    INSTANCETYPE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.RepeatedCompositeFieldContainer[KubernetesLabel]
    instanceType: str
    count: int
    def __init__(self, labels: _Optional[_Iterable[_Union[KubernetesLabel, _Mapping]]] = ..., instanceType: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class CreateClusterMsg(_message.Message):
    __slots__ = ("name", "k8s_version", "control_plane_nodes", "worker_node_pools")
    NAME_FIELD_NUMBER: _ClassVar[int]
    K8S_VERSION_FIELD_NUMBER: _ClassVar[int]
    CONTROL_PLANE_NODES_FIELD_NUMBER: _ClassVar[int]
    WORKER_NODE_POOLS_FIELD_NUMBER: _ClassVar[int]
    name: str
    k8s_version: str
    control_plane_nodes: ControlPlaneMachineSpec
    worker_node_pools: _containers.RepeatedCompositeFieldContainer[MachineSpec]
    def __init__(self, name: _Optional[str] = ..., k8s_version: _Optional[str] = ..., control_plane_nodes: _Optional[_Union[ControlPlaneMachineSpec, _Mapping]] = ..., worker_node_pools: _Optional[_Iterable[_Union[MachineSpec, _Mapping]]] = ...) -> None: ...

class CreateClusterReply(_message.Message):
    __slots__ = ("ok", "cluster")
    OK_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    cluster: ClusterItem
    def __init__(self, ok: _Optional[bool] = ..., cluster: _Optional[_Union[ClusterItem, _Mapping]] = ...) -> None: ...

class DeleteClusterMsg(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteClusterReply(_message.Message):
    __slots__ = ("ok", "status")
    OK_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    status: str
    def __init__(self, ok: _Optional[bool] = ..., status: _Optional[str] = ...) -> None: ...

class DeleteNodePoolMsg(_message.Message):
    __slots__ = ("clusterName", "node_pool_names")
    CLUSTERNAME_FIELD_NUMBER: _ClassVar[int]
    NODE_POOL_NAMES_FIELD_NUMBER: _ClassVar[int]
    clusterName: str
    node_pool_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, clusterName: _Optional[str] = ..., node_pool_names: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteNodePoolReply(_message.Message):
    __slots__ = ("ok",)
    OK_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    def __init__(self, ok: _Optional[bool] = ...) -> None: ...

class GetClusterListMsg(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetClusterListReply(_message.Message):
    __slots__ = ("ok", "clusters")
    OK_FIELD_NUMBER: _ClassVar[int]
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    clusters: _containers.RepeatedCompositeFieldContainer[ClusterItem]
    def __init__(self, ok: _Optional[bool] = ..., clusters: _Optional[_Iterable[_Union[ClusterItem, _Mapping]]] = ...) -> None: ...

class GetClusterMsg(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetClusterNodesStatusMsg(_message.Message):
    __slots__ = ("clusterName",)
    CLUSTERNAME_FIELD_NUMBER: _ClassVar[int]
    clusterName: str
    def __init__(self, clusterName: _Optional[str] = ...) -> None: ...

class GetClusterNodesStatusReply(_message.Message):
    __slots__ = ("Name", "count", "machines")
    class MachineStatus(_message.Message):
        __slots__ = ("k8sNodeStatus", "k8sVersion", "maasSystemId", "maasHostname", "maasNodeStatus", "maasIPAddr")
        K8SNODESTATUS_FIELD_NUMBER: _ClassVar[int]
        K8SVERSION_FIELD_NUMBER: _ClassVar[int]
        MAASSYSTEMID_FIELD_NUMBER: _ClassVar[int]
        MAASHOSTNAME_FIELD_NUMBER: _ClassVar[int]
        MAASNODESTATUS_FIELD_NUMBER: _ClassVar[int]
        MAASIPADDR_FIELD_NUMBER: _ClassVar[int]
        k8sNodeStatus: str
        k8sVersion: str
        maasSystemId: str
        maasHostname: str
        maasNodeStatus: str
        maasIPAddr: str
        def __init__(self, k8sNodeStatus: _Optional[str] = ..., k8sVersion: _Optional[str] = ..., maasSystemId: _Optional[str] = ..., maasHostname: _Optional[str] = ..., maasNodeStatus: _Optional[str] = ..., maasIPAddr: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    MACHINES_FIELD_NUMBER: _ClassVar[int]
    Name: str
    count: int
    machines: _containers.RepeatedCompositeFieldContainer[GetClusterNodesStatusReply.MachineStatus]
    def __init__(self, Name: _Optional[str] = ..., count: _Optional[int] = ..., machines: _Optional[_Iterable[_Union[GetClusterNodesStatusReply.MachineStatus, _Mapping]]] = ...) -> None: ...

class GetClusterReply(_message.Message):
    __slots__ = ("ok", "cluster")
    OK_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    cluster: ClusterDetailItem
    def __init__(self, ok: _Optional[bool] = ..., cluster: _Optional[_Union[ClusterDetailItem, _Mapping]] = ...) -> None: ...

class GetUpgradeClusterInformationMsg(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetUpgradeClusterInformationReply(_message.Message):
    __slots__ = ("ok", "versions")
    OK_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    versions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ok: _Optional[bool] = ..., versions: _Optional[_Iterable[str]] = ...) -> None: ...

class GetVersionMsg(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetVersionReply(_message.Message):
    __slots__ = ("ok", "version_information")
    class VersionInformation(_message.Message):
        __slots__ = ("git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler", "platform")
        GIT_VERSION_FIELD_NUMBER: _ClassVar[int]
        GIT_COMMIT_FIELD_NUMBER: _ClassVar[int]
        GIT_TREE_STATE_FIELD_NUMBER: _ClassVar[int]
        BUILD_DATE_FIELD_NUMBER: _ClassVar[int]
        GO_VERSION_FIELD_NUMBER: _ClassVar[int]
        COMPILER_FIELD_NUMBER: _ClassVar[int]
        PLATFORM_FIELD_NUMBER: _ClassVar[int]
        git_version: str
        git_commit: str
        git_tree_state: str
        build_date: str
        go_version: str
        compiler: str
        platform: str
        def __init__(self, git_version: _Optional[str] = ..., git_commit: _Optional[str] = ..., git_tree_state: _Optional[str] = ..., build_date: _Optional[str] = ..., go_version: _Optional[str] = ..., compiler: _Optional[str] = ..., platform: _Optional[str] = ...) -> None: ...
    OK_FIELD_NUMBER: _ClassVar[int]
    VERSION_INFORMATION_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    version_information: GetVersionReply.VersionInformation
    def __init__(self, ok: _Optional[bool] = ..., version_information: _Optional[_Union[GetVersionReply.VersionInformation, _Mapping]] = ...) -> None: ...

class KubernetesLabel(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class MachineSpec(_message.Message):
    __slots__ = ("name", "labels", "instanceType", "count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    INSTANCETYPE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    labels: _containers.RepeatedCompositeFieldContainer[KubernetesLabel]
    instanceType: str
    count: int
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Iterable[_Union[KubernetesLabel, _Mapping]]] = ..., instanceType: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class ScaleNodePoolMsg(_message.Message):
    __slots__ = ("clusterName", "node_pools")
    CLUSTERNAME_FIELD_NUMBER: _ClassVar[int]
    NODE_POOLS_FIELD_NUMBER: _ClassVar[int]
    clusterName: str
    node_pools: _containers.RepeatedCompositeFieldContainer[ScaleNodePoolSpec]
    def __init__(self, clusterName: _Optional[str] = ..., node_pools: _Optional[_Iterable[_Union[ScaleNodePoolSpec, _Mapping]]] = ...) -> None: ...

class ScaleNodePoolReply(_message.Message):
    __slots__ = ("ok",)
    OK_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    def __init__(self, ok: _Optional[bool] = ...) -> None: ...

class ScaleNodePoolSpec(_message.Message):
    __slots__ = ("name", "count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    count: int
    def __init__(self, name: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class UpgradeClusterMsg(_message.Message):
    __slots__ = ("name", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class UpgradeClusterReply(_message.Message):
    __slots__ = ("ok",)
    OK_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    def __init__(self, ok: _Optional[bool] = ...) -> None: ...
