from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    L_PROTO_UNKNOWN: _ClassVar[LProto]
    L_PROTO_TCP: _ClassVar[LProto]
    L_PROTO_UDP: _ClassVar[LProto]
    L_PROTO_HTTP: _ClassVar[LProto]
L_PROTO_UNKNOWN: LProto
L_PROTO_TCP: LProto
L_PROTO_UDP: LProto
L_PROTO_HTTP: LProto

class AppPort(_message.Message):
    __slots__ = ("proto", "internal_port", "public_port", "path_prefix", "fqdn_prefix")
    PROTO_FIELD_NUMBER: _ClassVar[int]
    INTERNAL_PORT_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_PORT_FIELD_NUMBER: _ClassVar[int]
    PATH_PREFIX_FIELD_NUMBER: _ClassVar[int]
    FQDN_PREFIX_FIELD_NUMBER: _ClassVar[int]
    proto: LProto
    internal_port: int
    public_port: int
    path_prefix: str
    fqdn_prefix: str
    def __init__(self, proto: _Optional[_Union[LProto, str]] = ..., internal_port: _Optional[int] = ..., public_port: _Optional[int] = ..., path_prefix: _Optional[str] = ..., fqdn_prefix: _Optional[str] = ...) -> None: ...
