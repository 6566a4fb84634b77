from ..edgeproto import flavor_pb2 as _flavor_pb2
from ..edgeproto import result_pb2 as _result_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Cluster(_message.Message):
    __slots__ = ("fields", "key", "default_flavor", "auto")
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FLAVOR_FIELD_NUMBER: _ClassVar[int]
    AUTO_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    key: ClusterKey
    default_flavor: _flavor_pb2.FlavorKey
    auto: bool
    def __init__(self, fields: _Optional[_Iterable[str]] = ..., key: _Optional[_Union[ClusterKey, _Mapping]] = ..., default_flavor: _Optional[_Union[_flavor_pb2.FlavorKey, _Mapping]] = ..., auto: _Optional[bool] = ...) -> None: ...

class ClusterKey(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...
