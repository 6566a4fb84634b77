from ..edgeproto import result_pb2 as _result_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Developer(_message.Message):
    __slots__ = ("fields", "key", "username", "passhash", "address", "email")
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    USERNAME_FIELD_NUMBER: _ClassVar[int]
    PASSHASH_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    key: DeveloperKey
    username: str
    passhash: str
    address: str
    email: str
    def __init__(self, fields: _Optional[_Iterable[str]] = ..., key: _Optional[_Union[DeveloperKey, _Mapping]] = ..., username: _Optional[str] = ..., passhash: _Optional[str] = ..., address: _Optional[str] = ..., email: _Optional[str] = ...) -> None: ...

class DeveloperKey(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...
