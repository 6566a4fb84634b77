from ..edgeproto import cloudlet_pb2 as _cloudlet_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NodeType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NODE_UNKNOWN: _ClassVar[NodeType]
    NODE_DME: _ClassVar[NodeType]
    NODE_CRM: _ClassVar[NodeType]
NODE_UNKNOWN: NodeType
NODE_DME: NodeType
NODE_CRM: NodeType

class Node(_message.Message):
    __slots__ = ("fields", "key", "notify_id")
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    NOTIFY_ID_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    key: NodeKey
    notify_id: int
    def __init__(self, fields: _Optional[_Iterable[str]] = ..., key: _Optional[_Union[NodeKey, _Mapping]] = ..., notify_id: _Optional[int] = ...) -> None: ...

class NodeKey(_message.Message):
    __slots__ = ("name", "node_type", "cloudlet_key")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_TYPE_FIELD_NUMBER: _ClassVar[int]
    CLOUDLET_KEY_FIELD_NUMBER: _ClassVar[int]
    name: str
    node_type: NodeType
    cloudlet_key: _cloudlet_pb2.CloudletKey
    def __init__(self, name: _Optional[str] = ..., node_type: _Optional[_Union[NodeType, str]] = ..., cloudlet_key: _Optional[_Union[_cloudlet_pb2.CloudletKey, _Mapping]] = ...) -> None: ...
