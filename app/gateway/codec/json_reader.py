"""JSON objects into messages for the plain shapes most request bodies have.

``json_format`` converts each field through general code that dispatches on the field's type at
every value, and the codec walks the tree once more beforehand for the checks json_format does
not make: together about a third of a create's cost. Most bodies are plain: strings, booleans,
integers, enum names, nested messages, lists and string-keyed maps of those. For them the
conversion is the identity (or an enum lookup), and a reader compiled once per message type
from its descriptor can check the whole tree and then set it.

:func:`read_plain` only says yes when its result is exactly what json_format would produce and
the codec's own checks would pass. Anything else (a well-known type, bytes, a float, a number as
a string, null, an unknown key, a field under both spellings, two members of a oneof, a list
over the cap, an undefined enum name) answers False having changed nothing, and the caller
takes the general path with its precise error messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

from google.protobuf import descriptor
from google.protobuf.message import Message

from app.settings import limits

_F = descriptor.FieldDescriptor
# Deeper trees go the general way: its recursion limit and messages apply.
_MAX_DEPTH = 32
# json_format refuses strings with a lone surrogate (json.loads can produce them from \ud800).
_SURROGATE = re.compile("[\ud800-\udfff]")

_INT_RANGES = {
    _F.TYPE_INT32: (-(2**31), 2**31 - 1),
    _F.TYPE_SINT32: (-(2**31), 2**31 - 1),
    _F.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    _F.TYPE_UINT32: (0, 2**32 - 1),
    _F.TYPE_FIXED32: (0, 2**32 - 1),
    _F.TYPE_INT64: (-(2**63), 2**63 - 1),
    _F.TYPE_SINT64: (-(2**63), 2**63 - 1),
    _F.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    _F.TYPE_UINT64: (0, 2**64 - 1),
    _F.TYPE_FIXED64: (0, 2**64 - 1),
}

# A scalar's check: the JSON value as it is stored (an enum's as its number), or _NO.
_NO = object()
Scalar = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    oneof: str | None
    repeated: bool
    is_map: bool
    scalar: Scalar | None  # a scalar field's (or map value's) check and conversion
    shape: dict[str, _Field]  # a message field's (or map value's) fields; empty for scalars


_Shape = dict[str, _Field]  # by proto name and by JSON name
# By descriptor, not name: a proxied upstream's types may share names with other pools' types.
_SHAPES: dict[descriptor.Descriptor, _Shape | None] = {}


def read_plain(value: dict[str, Any], target: Message) -> bool:
    """Merge ``value`` into ``target`` as json_format would, if it is plain; else False, with
    ``target`` untouched."""
    # The stubs type DESCRIPTOR as the pure-Python or the upb class; both have this API.
    shape = _shape_of(cast(descriptor.Descriptor, target.DESCRIPTOR))
    if shape is None or not _fits(value, shape, 0):
        return False
    _apply(value, target, shape)
    return True


def _fits(value: Any, shape: _Shape, depth: int) -> bool:
    if type(value) is not dict or depth > _MAX_DEPTH:
        return False
    named: set[str] = set()
    for key, item in value.items():
        field = shape.get(key)
        if field is None or field.name in named:
            return False
        named.add(field.name)
        if field.oneof is not None:
            if field.oneof in named:
                return False
            named.add(field.oneof)
        items: Iterable[Any]
        if field.is_map:
            if type(item) is not dict or len(item) > limits.MAX_REPEATED_ELEMENTS:
                return False
            if not all(type(k) is str for k in item):
                return False
            items = item.values()
        elif field.repeated:
            if type(item) is not list or len(item) > limits.MAX_REPEATED_ELEMENTS:
                return False
            items = item
        else:
            items = (item,)
        scalar = field.scalar
        if scalar is not None:
            for element in items:
                if scalar(element) is _NO:
                    return False
        else:
            for element in items:
                if not _fits(element, field.shape, depth + 1):
                    return False
    return True


def _apply(value: dict[str, Any], target: Message, shape: _Shape) -> None:
    # json_format's semantics when merging: lists and maps are replaced, messages merged.
    for key, item in value.items():
        field = shape[key]
        name = field.name
        scalar = field.scalar
        if field.repeated:
            target.ClearField(name)
            container = getattr(target, name)
            if field.is_map:
                if scalar is not None:
                    container.update({k: scalar(v) for k, v in item.items()})
                else:
                    for k, v in item.items():
                        _apply(v, container[k], field.shape)
            elif scalar is not None:
                container.extend([scalar(v) for v in item])
            else:
                for v in item:
                    _apply(v, container.add(), field.shape)
        elif scalar is not None:
            setattr(target, name, scalar(item))
        else:
            child = getattr(target, name)
            child.SetInParent()
            _apply(item, child, field.shape)


# -- compiling a message type's shape ---------------------------------------------------------


def _shape_of(desc: descriptor.Descriptor) -> _Shape | None:
    """The reader of ``desc``, or None where only the general path will do (well-known types,
    extensions)."""
    if desc in _SHAPES:
        return _SHAPES[desc]
    if desc.full_name.startswith("google.protobuf.") or desc.is_extendable:
        _SHAPES[desc] = None
        return None
    shape: _Shape = {}
    _SHAPES[desc] = shape  # a recursive type finds itself while being compiled
    for fd in desc.fields:
        field = _field(fd)
        if field is not None:
            shape[fd.name] = shape[fd.json_name] = field
    return shape


def _field(fd: descriptor.FieldDescriptor) -> _Field | None:
    oneof = fd.containing_oneof.name if fd.containing_oneof is not None else None
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        key, value = fd.message_type.fields_by_name["key"], fd.message_type.fields_by_name["value"]
        if key.type != _F.TYPE_STRING:
            return None
        return _kind(value, fd.name, oneof, repeated=True, is_map=True)
    return _kind(fd, fd.name, oneof, repeated=fd.is_repeated, is_map=False)


def _kind(
    fd: descriptor.FieldDescriptor, name: str, oneof: str | None, *, repeated: bool, is_map: bool
) -> _Field | None:
    if fd.message_type is not None:
        shape = _shape_of(fd.message_type)
        if shape is None:
            return None
        return _Field(name, oneof, repeated, is_map, None, shape)
    scalar = _scalar(fd)
    return None if scalar is None else _Field(name, oneof, repeated, is_map, scalar, {})


def _scalar(fd: descriptor.FieldDescriptor) -> Scalar | None:
    if fd.type == _F.TYPE_STRING:
        return _string
    if fd.type == _F.TYPE_BOOL:
        return _bool
    if fd.type in _INT_RANGES:
        low, high = _INT_RANGES[fd.type]

        def integer(value: Any) -> Any:
            return value if type(value) is int and low <= value <= high else _NO

        return integer
    if fd.type == _F.TYPE_ENUM and fd.enum_type is not None:
        # By name only: a number (json_format truncates 3.9 and wraps 2**40) goes the general way.
        numbers = {value.name: value.number for value in fd.enum_type.values}

        def enum(value: Any) -> Any:
            return numbers.get(value, _NO) if type(value) is str else _NO

        return enum
    return None  # floats, doubles and bytes have conversions of their own


def _string(value: Any) -> Any:
    if type(value) is not str or (not value.isascii() and _SURROGATE.search(value)):
        return _NO
    return value


def _bool(value: Any) -> Any:
    return value if type(value) is bool else _NO
