from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import empty_pb2 as _empty_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUNNING: _ClassVar[Status]
    STARTING: _ClassVar[Status]
    STOPPED: _ClassVar[Status]
    STOPPING: _ClassVar[Status]
    DESTROYING: _ClassVar[Status]
    TERMINATED: _ClassVar[Status]
    FAILED: _ClassVar[Status]
    SCHEDULING: _ClassVar[Status]
    SCHEDULED: _ClassVar[Status]

class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTAINER: _ClassVar[Type]
RUNNING: Status
STARTING: Status
STOPPED: Status
STOPPING: Status
DESTROYING: Status
TERMINATED: Status
FAILED: Status
SCHEDULING: Status
SCHEDULED: Status
CONTAINER: Type

class Instance(_message.Message):
    __slots__ = ("id", "name", "type", "status", "uri", "environnement", "resource", "ports", "ip")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    ENVIRONNEMENT_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    IP_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    type: Type
    status: Status
    uri: str
    environnement: _containers.RepeatedScalarFieldContainer[str]
    resource: Resource
    ports: _containers.RepeatedCompositeFieldContainer[Port]
    ip: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., type: _Optional[_Union[Type, str]] = ..., status: _Optional[_Union[Status, str]] = ..., uri: _Optional[str] = ..., environnement: _Optional[_Iterable[str]] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ..., ports: _Optional[_Iterable[_Union[Port, _Mapping]]] = ..., ip: _Optional[str] = ...) -> None: ...

class Port(_message.Message):
    __slots__ = ("source", "destination")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    source: int
    destination: int
    def __init__(self, source: _Optional[int] = ..., destination: _Optional[int] = ...) -> None: ...

class ResourceSummary(_message.Message):
    __slots__ = ("cpu", "memory", "disk")
    CPU_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    DISK_FIELD_NUMBER: _ClassVar[int]
    cpu: int
    memory: int
    disk: int
    def __init__(self, cpu: _Optional[int] = ..., memory: _Optional[int] = ..., disk: _Optional[int] = ...) -> None: ...

class Resource(_message.Message):
    __slots__ = ("limit", "usage")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    limit: ResourceSummary
    usage: ResourceSummary
    def __init__(self, limit: _Optional[_Union[ResourceSummary, _Mapping]] = ..., usage: _Optional[_Union[ResourceSummary, _Mapping]] = ...) -> None: ...

class InstanceStatus(_message.Message):
    __slots__ = ("id", "status", "statusDescription", "resource")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUSDESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    id: str
    status: Status
    statusDescription: str
    resource: Resource
    def __init__(self, id: _Optional[str] = ..., status: _Optional[_Union[Status, str]] = ..., statusDescription: _Optional[str] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ...) -> None: ...

class NodeStatus(_message.Message):
    __slots__ = ("id", "status", "statusDescription", "resource")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUSDESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    id: str
    status: Status
    statusDescription: str
    resource: Resource
    def __init__(self, id: _Optional[str] = ..., status: _Optional[_Union[Status, str]] = ..., statusDescription: _Optional[str] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ...) -> None: ...

class NodeRegisterRequest(_message.Message):
    __slots__ = ("certificate",)
    CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    certificate: str
    def __init__(self, certificate: _Optional[str] = ...) -> None: ...

class NodeRegisterResponse(_message.Message):
    __slots__ = ("code", "description", "subnet")
    CODE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SUBNET_FIELD_NUMBER: _ClassVar[int]
    code: int
    description: str
    subnet: str
    def __init__(self, code: _Optional[int] = ..., description: _Optional[str] = ..., subnet: _Optional[str] = ...) -> None: ...

class NodeUnregisterRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class NodeUnregisterResponse(_message.Message):
    __slots__ = ("code", "description")
    CODE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    code: int
    description: str
    def __init__(self, code: _Optional[int] = ..., description: _Optional[str] = ...) -> None: ...

class InstanceIdentifier(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...
