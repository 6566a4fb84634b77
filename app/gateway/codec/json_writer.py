"""Messages into JSON objects with a writer compiled once per message type.

``json_format.MessageToDict`` decides what to do with every field of every reply through
general code: a stored cluster's reply spent as long being turned into a dict as being read.
The writer here makes those decisions once per message type, from its descriptor, and keeps
for each field its JSON name and a converter; the output is json_format's own, key for key and
in the same order (set fields by number, then the unset fields without presence, by
declaration). Well-known types are still converted by json_format, one value at a time; a type
with ``Any`` anywhere below it (which resolves types at run time) or custom enum names is left
to json_format whole, as is a value json_format would refuse (an unknown number in a closed
enum).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from google.protobuf import descriptor, descriptor_pool, json_format
from google.protobuf.internal import type_checkers
from google.protobuf.message import Message

_F = descriptor.FieldDescriptor
Convert = Callable[[Any], Any]
_INT64 = frozenset({_F.CPPTYPE_INT64, _F.CPPTYPE_UINT64})


class _Refused(Exception):
    """A value json_format has its own error for."""


@dataclass(slots=True)
class _Plan:
    convert: dict[descriptor.FieldDescriptor, tuple[str, Convert]]  # set fields
    unset: tuple[tuple[str, Callable[[], Any]], ...]  # unset fields without presence: defaults


# By descriptor, not name: a proxied upstream's types may share names with other pools' types.
_PLANS: dict[tuple[descriptor.Descriptor, bool], _Plan | None] = {}


def write_plain(msg: Message, proto_names: bool) -> dict[str, Any] | None:
    """``msg`` as json_format's MessageToDict writes it (default values included), or None
    where only json_format will do."""
    # The stubs type DESCRIPTOR as the pure-Python or the upb class; both have this API.
    plan = _plan(cast(descriptor.Descriptor, msg.DESCRIPTOR), proto_names)
    if plan is None:
        return None
    try:
        return _write(msg, plan)
    except (_Refused, KeyError):
        return None  # KeyError: an extension is set, which the plan does not know


def _write(msg: Message, plan: _Plan) -> dict[str, Any]:
    js: dict[str, Any] = {}
    convert = plan.convert
    for fd, value in msg.ListFields():
        name, to_json = convert[fd]
        js[name] = to_json(value)
    for name, default in plan.unset:
        if name not in js:
            js[name] = default()
    return js


# -- compiling a message type's plan -----------------------------------------------------------


def _plan(desc: descriptor.Descriptor, proto_names: bool) -> _Plan | None:
    key = (desc, proto_names)
    if key in _PLANS:
        return _PLANS[key]
    if _is_wkt(desc) or _holds_any(desc, set()) or _custom_enum_names():
        _PLANS[key] = None
        return None
    plan = _PLANS[key] = _Plan({}, ())  # a recursive type finds itself while being compiled
    unset = []
    for fd in desc.fields:
        name = fd.name if proto_names else fd.json_name
        plan.convert[fd] = (name, _field(fd, proto_names))
        if not fd.has_presence:
            unset.append((name, _default(fd, proto_names)))
    plan.unset = tuple(unset)
    return plan


def _field(fd: descriptor.FieldDescriptor, proto_names: bool) -> Convert:
    entry = fd.message_type
    if entry is not None and entry.GetOptions().map_entry:
        value = _single(entry.fields_by_name["value"], proto_names)
        return partial(_map, value)
    single = _single(fd, proto_names)
    return partial(_list, single) if fd.is_repeated else single


def _default(fd: descriptor.FieldDescriptor, proto_names: bool) -> Callable[[], Any]:
    if fd.is_repeated:
        entry = fd.message_type
        return dict if entry is not None and entry.GetOptions().map_entry else list
    constant = _single(fd, proto_names)(fd.default_value)
    return lambda: constant


def _single(fd: descriptor.FieldDescriptor, proto_names: bool) -> Convert:
    cpp, sub, enum = fd.cpp_type, fd.message_type, fd.enum_type
    if sub is not None:
        if _is_wkt(sub):
            return partial(_wkt, proto_names)
        return partial(_message, sub, proto_names)
    if enum is not None:
        if enum.full_name == "google.protobuf.NullValue":
            return _null
        names = {value.number: value.name for value in enum.values}
        return partial(_enum, names, enum.is_closed)
    if fd.type == _F.TYPE_BYTES:
        return _bytes
    if cpp in _INT64:
        return str
    if cpp == _F.CPPTYPE_FLOAT:
        return _float32
    if cpp == _F.CPPTYPE_DOUBLE:
        return _double
    return _same  # strings, booleans, 32-bit integers


def _message(desc: descriptor.Descriptor, proto_names: bool, value: Message) -> dict[str, Any]:
    plan = _plan(desc, proto_names)
    assert plan is not None  # a plain type's fields are plain (Any would have ruled it out)
    return _write(value, plan)


def _wkt(proto_names: bool, value: Message) -> Any:
    return json_format.MessageToDict(
        value, preserving_proto_field_name=proto_names, always_print_fields_with_no_presence=True
    )


def _enum(names: dict[int, str], closed: bool, value: int) -> Any:
    name = names.get(value)
    if name is not None:
        return name
    if closed:
        raise _Refused
    return value


def _map(convert: Convert, value: Any) -> dict[str, Any]:
    return {_map_key(key): convert(item) for key, item in value.items()}


def _map_key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _list(convert: Convert, value: Any) -> list[Any]:
    return [convert(item) for item in value]


def _same(value: Any) -> Any:
    return value


def _null(value: Any) -> None:
    return None


def _bytes(value: bytes) -> str:
    return base64.b64encode(value).decode("utf-8")


def _special(value: float) -> str | None:
    if math.isinf(value):
        return "-Infinity" if value < 0.0 else "Infinity"
    if math.isnan(value):
        return "NaN"
    return None


def _double(value: float) -> Any:
    special = _special(value)
    return value if special is None else special


def _float32(value: float) -> Any:
    special = _special(value)
    return type_checkers.ToShortestFloat(value) if special is None else special


def _is_wkt(desc: descriptor.Descriptor) -> bool:
    return desc.full_name.startswith("google.protobuf.")


def _holds_any(desc: descriptor.Descriptor, seen: set[str]) -> bool:
    """Whether an ``Any`` can occur in ``desc`` at any depth (its type resolves at run time)."""
    if desc.full_name == "google.protobuf.Any":
        return True
    if desc.full_name in seen:
        return False
    seen.add(desc.full_name)
    return any(
        fd.message_type is not None and _holds_any(fd.message_type, seen) for fd in desc.fields
    )


_CUSTOM_NAMES: list[bool] = []


def _custom_enum_names() -> bool:
    """Whether enum values may carry JSON names of their own (json_format honours them)."""
    if not _CUSTOM_NAMES:
        try:
            descriptor_pool.Default().FindExtensionByName("pb.enumvalue.json")
            _CUSTOM_NAMES.append(True)
        except KeyError:
            _CUSTOM_NAMES.append(False)
    return _CUSTOM_NAMES[0]
