from ..edgeproto import app_inst_pb2 as _app_inst_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExecRequest(_message.Message):
    __slots__ = ("app_inst_key", "command", "container_id", "offer", "answer", "err")
    APP_INST_KEY_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    OFFER_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    ERR_FIELD_NUMBER: _ClassVar[int]
    app_inst_key: _app_inst_pb2.AppInstKey
    command: str
    container_id: str
    offer: str
    answer: str
    err: str
    def __init__(self, app_inst_key: _Optional[_Union[_app_inst_pb2.AppInstKey, _Mapping]] = ..., command: _Optional[str] = ..., container_id: _Optional[str] = ..., offer: _Optional[str] = ..., answer: _Optional[str] = ..., err: _Optional[str] = ...) -> None: ...
