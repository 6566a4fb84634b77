from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import any_pb2 as _any_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NoticeAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NONE: _ClassVar[NoticeAction]
    UPDATE: _ClassVar[NoticeAction]
    DELETE: _ClassVar[NoticeAction]
    VERSION: _ClassVar[NoticeAction]
    SENDALL_END: _ClassVar[NoticeAction]
NONE: NoticeAction
UPDATE: NoticeAction
DELETE: NoticeAction
VERSION: NoticeAction
SENDALL_END: NoticeAction

class Notice(_message.Message):
    __slots__ = ("action", "version", "any", "want_objs", "filter_cloudlet_key")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ANY_FIELD_NUMBER: _ClassVar[int]
    WANT_OBJS_FIELD_NUMBER: _ClassVar[int]
    FILTER_CLOUDLET_KEY_FIELD_NUMBER: _ClassVar[int]
    action: NoticeAction
    version: int
    any: _any_pb2.Any
    want_objs: _containers.RepeatedScalarFieldContainer[str]
    filter_cloudlet_key: bool
    def __init__(self, action: _Optional[_Union[NoticeAction, str]] = ..., version: _Optional[int] = ..., any: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., want_objs: _Optional[_Iterable[str]] = ..., filter_cloudlet_key: _Optional[bool] = ...) -> None: ...
