"""Query parameters and path variables: dotted names to field paths, text values to fields.

A name is resolved by field path (either spelling per segment); a plain string value is set on
the message directly, any other is put into a proto-named JSON tree, converted by the field's
type, for :func:`app.gateway.codec.json_mapping.parse_into` to read with the rest of the request.
"""

from __future__ import annotations

import functools
from typing import Any

from google.protobuf import descriptor, message

from app.calls.close_names import close_names, did_you_mean
from app.gateway.errors import BadRequest
from app.gateway.message_checks import is_map

FieldPath = tuple[descriptor.FieldDescriptor, ...]

# Well-known types whose JSON form is a string, so a query parameter can carry them.
_STRING_WKTS = frozenset(
    {"google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.FieldMask"}
)
_WRAPPERS = frozenset(
    f"google.protobuf.{name}Value"
    for name in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
)

# Query parameter names resolved before, by message: a request's keys are looked up, not parsed.
# Only names that resolve are kept, and only so many (recursive messages nest without end).
_RESOLVED: dict[tuple[str, str], FieldPath] = {}
_RESOLVED_MAX = 4096


def resolve_field_path(
    desc: descriptor.Descriptor, dotted: str, ignore_unknown: bool = False
) -> FieldPath | None:
    """Fields along a dotted name (either spelling per segment); None if unknown and ignored."""
    cache_key = (desc.full_name, dotted)
    fields = _RESOLVED.get(cache_key)
    if fields is None:
        fields = _resolve_field_path(desc, dotted, ignore_unknown)
        if fields is not None and len(_RESOLVED) < _RESOLVED_MAX:
            _RESOLVED[cache_key] = fields
    return fields


@functools.lru_cache(maxsize=_RESOLVED_MAX)
def path_name(path: FieldPath) -> str:
    """The proto-named dotted name of a field path."""
    return ".".join(f.name for f in path)


def _resolve_field_path(
    desc: descriptor.Descriptor, dotted: str, ignore_unknown: bool
) -> FieldPath | None:
    fields: list[descriptor.FieldDescriptor] = []
    current: descriptor.Descriptor | None = desc
    for index, part in enumerate(dotted.split(".")):
        field = None if current is None else field_by_any_name(current, part)
        if field is None:
            if ignore_unknown:
                return None
            problem = no_such_field(current, part, ".".join(dotted.split(".")[:index]))
            raise BadRequest(f"unknown query parameter {dotted!r}: {problem}", [(dotted, problem)])
        fields.append(field)
        if field.message_type is not None and not is_map(field) and not field.is_repeated:
            current = field.message_type
        else:
            current = None
    return tuple(fields)


def assign_text(target: message.Message, path: FieldPath, text: str) -> bool:
    """Set a query/path text value straight on the message when it is a plain string field.

    Most path variables and query parameters are singular strings, for which the JSON mapping
    is the identity: setting them directly skips building and parsing a JSON tree. False when
    the value needs that mapping (numbers, enums, bytes, repeated fields, oneof members...).
    """
    if not _is_plain_string(path):
        return False
    for field in path[:-1]:
        target = getattr(target, field.name)
    setattr(target, path[-1].name, text)
    return True


@functools.lru_cache(maxsize=_RESOLVED_MAX)
def _is_plain_string(path: FieldPath) -> bool:
    *parents, last = path
    return (
        last.type == descriptor.FieldDescriptor.TYPE_STRING
        and not last.is_repeated
        and last.containing_oneof is None
        and all(
            f.message_type is not None
            and not f.is_repeated
            and f.containing_oneof is None
            and not f.message_type.full_name.startswith("google.protobuf.")
            for f in parents
        )
    )


def set_text_value(tree: dict[str, Any], path: FieldPath, text: str, *, repeat: bool) -> None:
    """Put a query/path text value at ``path`` of a proto-named JSON tree, converted by type.

    ``repeat`` says whether this path was seen before (a repeated field appends; others refuse).
    """
    name = path_name(path)
    for field in path[:-1]:
        if field.message_type is None or field.is_repeated:
            raise BadRequest(f"{name!r} does not name a field", [(name, "not a message field")])
        tree = tree.setdefault(field.name, {})
    field = path[-1]
    value = _text_to_json(field, text, name)
    if field.is_repeated:
        tree.setdefault(field.name, []).append(value)
    elif repeat:
        raise BadRequest(f"{name!r} is given more than once", [(name, "given more than once")])
    else:
        tree[field.name] = value


def _text_to_json(field: descriptor.FieldDescriptor, text: str, name: str) -> Any:
    if is_map(field):
        raise BadRequest(f"map field {name!r} cannot be a query parameter", [(name, "map field")])
    if field.message_type is not None:
        full = field.message_type.full_name
        if full in _STRING_WKTS:
            return text
        if full in _WRAPPERS:
            return _scalar_text(field.message_type.fields_by_name["value"], text, name)
        if full == "google.protobuf.Value":
            return text
        raise BadRequest(
            f"{name!r} is a message; set its fields with dotted names",
            [(name, "message fields cannot be set directly")],
        )
    return _scalar_text(field, text, name)


def _scalar_text(field: descriptor.FieldDescriptor, text: str, name: str) -> Any:
    if field.type == descriptor.FieldDescriptor.TYPE_BOOL:
        if text in ("true", "1"):
            return True
        if text in ("false", "0"):
            return False
        raise BadRequest(
            f"invalid {name}: {text!r} is not a boolean", [(name, "not true or false")]
        )
    # json_format reads numbers, enum names/numbers and base64 from strings itself.
    return text


def no_such_field(desc: descriptor.Descriptor | None, name: str, parent: str = "") -> str:
    """``no such field; did you mean parent.name?``: the closest fields of ``desc`` (the
    message at the path ``parent``), spelt as ``name`` is (JSON's lowerCamelCase when it has a
    capital, else the proto's)."""
    if desc is None:
        return "no such field"
    camel = not name.islower()
    spellings = (f.json_name if camel else f.name for f in desc.fields)
    close = close_names(name, spellings, n=1)
    return "no such field" + did_you_mean(
        close, lambda found: f"{parent}.{found}" if parent else found
    )


def field_by_any_name(desc: descriptor.Descriptor, name: str) -> descriptor.FieldDescriptor | None:
    """The field of ``desc`` called ``name`` in either spelling (proto or JSON), if any."""
    return desc.fields_by_name.get(name) or _json_names(desc).get(name)


_JSON_NAME_CACHE: dict[str, dict[str, descriptor.FieldDescriptor]] = {}


def _json_names(desc: descriptor.Descriptor) -> dict[str, descriptor.FieldDescriptor]:
    names = _JSON_NAME_CACHE.get(desc.full_name)
    if names is None:
        names = _JSON_NAME_CACHE[desc.full_name] = {f.json_name: f for f in desc.fields}
    return names
