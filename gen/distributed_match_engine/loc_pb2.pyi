from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Loc(_message.Message):
    __slots__ = ("latitude", "longitude", "horizontal_accuracy", "vertical_accuracy", "altitude", "course", "speed", "timestamp")
    LATITUDE_FIELD_NUMBER: _ClassVar[int]
    LONGITUDE_FIELD_NUMBER: _ClassVar[int]
    HORIZONTAL_ACCURACY_FIELD_NUMBER: _ClassVar[int]
    VERTICAL_ACCURACY_FIELD_NUMBER: _ClassVar[int]
    ALTITUDE_FIELD_NUMBER: _ClassVar[int]
    COURSE_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    latitude: float
    longitude: float
    horizontal_accuracy: float
    vertical_accuracy: float
    altitude: float
    course: float
    speed: float
    timestamp: Timestamp
    def __init__(self, latitude: _Optional[float] = ..., longitude: _Optional[float] = ..., horizontal_accuracy: _Optional[float] = ..., vertical_accuracy: _Optional[float] = ..., altitude: _Optional[float] = ..., course: _Optional[float] = ..., speed: _Optional[float] = ..., timestamp: _Optional[_Union[Timestamp, _Mapping]] = ...) -> None: ...

class Timestamp(_message.Message):
    __slots__ = ("seconds", "nanos")
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    NANOS_FIELD_NUMBER: _ClassVar[int]
    seconds: int
    nanos: int
    def __init__(self, seconds: _Optional[int] = ..., nanos: _Optional[int] = ...) -> None: ...
