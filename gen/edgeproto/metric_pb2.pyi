import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Metric(_message.Message):
    __slots__ = ("name", "timestamp", "tags", "vals")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    VALS_FIELD_NUMBER: _ClassVar[int]
    name: str
    timestamp: _timestamp_pb2.Timestamp
    tags: _containers.RepeatedCompositeFieldContainer[MetricTag]
    vals: _containers.RepeatedCompositeFieldContainer[MetricVal]
    def __init__(self, name: _Optional[str] = ..., timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tags: _Optional[_Iterable[_Union[MetricTag, _Mapping]]] = ..., vals: _Optional[_Iterable[_Union[MetricVal, _Mapping]]] = ...) -> None: ...

class MetricTag(_message.Message):
    __slots__ = ("name", "val")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    val: str
    def __init__(self, name: _Optional[str] = ..., val: _Optional[str] = ...) -> None: ...

class MetricVal(_message.Message):
    __slots__ = ("name", "dval", "ival")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DVAL_FIELD_NUMBER: _ClassVar[int]
    IVAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    dval: float
    ival: int
    def __init__(self, name: _Optional[str] = ..., dval: _Optional[float] = ..., ival: _Optional[int] = ...) -> None: ...
