from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor

class CRMOverride(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NO_OVERRIDE: _ClassVar[CRMOverride]
    IGNORE_CRM_ERRORS: _ClassVar[CRMOverride]
    IGNORE_CRM: _ClassVar[CRMOverride]
    IGNORE_TRANSIENT_STATE: _ClassVar[CRMOverride]
    IGNORE_CRM_AND_TRANSIENT_STATE: _ClassVar[CRMOverride]

class IpAccess(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IP_ACCESS_UNKNOWN: _ClassVar[IpAccess]
    IP_ACCESS_DEDICATED: _ClassVar[IpAccess]
    IP_ACCESS_DEDICATED_OR_SHARED: _ClassVar[IpAccess]
    IP_ACCESS_SHARED: _ClassVar[IpAccess]

class IpSupport(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IP_SUPPORT_UNKNOWN: _ClassVar[IpSupport]
    IP_SUPPORT_STATIC: _ClassVar[IpSupport]
    IP_SUPPORT_DYNAMIC: _ClassVar[IpSupport]

class Liveness(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LIVENESS_UNKNOWN: _ClassVar[Liveness]
    LIVENESS_STATIC: _ClassVar[Liveness]
    LIVENESS_DYNAMIC: _ClassVar[Liveness]

class TrackedState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRACKED_STATE_UNKNOWN: _ClassVar[TrackedState]
    NOT_PRESENT: _ClassVar[TrackedState]
    CREATE_REQUESTED: _ClassVar[TrackedState]
    CREATING: _ClassVar[TrackedState]
    CREATE_ERROR: _ClassVar[TrackedState]
    READY: _ClassVar[TrackedState]
    UPDATE_REQUESTED: _ClassVar[TrackedState]
    UPDATING: _ClassVar[TrackedState]
    UPDATE_ERROR: _ClassVar[TrackedState]
    DELETE_REQUESTED: _ClassVar[TrackedState]
    DELETING: _ClassVar[TrackedState]
    DELETE_ERROR: _ClassVar[TrackedState]
    DELETE_PREPARE: _ClassVar[TrackedState]
NO_OVERRIDE: CRMOverride
IGNORE_CRM_ERRORS: CRMOverride
IGNORE_CRM: CRMOverride
IGNORE_TRANSIENT_STATE: CRMOverride
IGNORE_CRM_AND_TRANSIENT_STATE: CRMOverride
IP_ACCESS_UNKNOWN: IpAccess
IP_ACCESS_DEDICATED: IpAccess
IP_ACCESS_DEDICATED_OR_SHARED: IpAccess
IP_ACCESS_SHARED: IpAccess
IP_SUPPORT_UNKNOWN: IpSupport
IP_SUPPORT_STATIC: IpSupport
IP_SUPPORT_DYNAMIC: IpSupport
LIVENESS_UNKNOWN: Liveness
LIVENESS_STATIC: Liveness
LIVENESS_DYNAMIC: Liveness
TRACKED_STATE_UNKNOWN: TrackedState
NOT_PRESENT: TrackedState
CREATE_REQUESTED: TrackedState
CREATING: TrackedState
CREATE_ERROR: TrackedState
READY: TrackedState
UPDATE_REQUESTED: TrackedState
UPDATING: TrackedState
UPDATE_ERROR: TrackedState
DELETE_REQUESTED: TrackedState
DELETING: TrackedState
DELETE_ERROR: TrackedState
DELETE_PREPARE: TrackedState
