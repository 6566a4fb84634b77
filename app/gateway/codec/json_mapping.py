"""JSON bodies, query parameters and path variables ↔ protobuf messages (proto3 JSON mapping).

Conversion is ``google.protobuf.json_format`` (plain bodies take the compiled reader of
:mod:`app.gateway.codec.json_reader`, replies the compiled writer of
:mod:`app.gateway.codec.json_writer`, both giving json_format's own results); this module adds what
it lacks for a gateway: strict decoding of raw bytes and turning every parse failure into
:class:`~app.gateway.errors.BadRequest` naming the offending field. Query parameters and path
variables are :mod:`app.gateway.codec.text_fields`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from google.protobuf import descriptor, descriptor_pool, json_format, message

from app.gateway.codec.json_reader import read_plain
from app.gateway.codec.json_writer import write_plain
from app.gateway.codec.text_fields import field_by_any_name, no_such_field
from app.gateway.errors import BadRequest
from app.gateway.message_checks import is_map, too_many, undefined_enum
from app.settings import limits

_MAX_DEPTH = 64  # far beyond any real message; json_format enforces its own limit of 100 too


@dataclass(frozen=True)
class JsonOptions:
    """How messages are written and read: field naming and the unknown-field policy."""

    proto_names: bool = True  # Settings.json_names == "proto"
    ignore_unknown: bool = False  # Settings.unknown_fields == "ignore"


def load_json(raw: bytes, what: str = "request body") -> Any:
    """Strictly decode JSON bytes: UTF-8, no duplicate keys, bounded nesting and item count."""
    # A document under the item limit in bytes cannot hold more items; a bigger one is counted
    # before parsing, as parsing a million tiny objects alone would stall every other caller.
    if len(raw) > limits.MAX_JSON_ITEMS and (
        limits.json_items_upper_bound(raw) > limits.MAX_JSON_ITEMS
    ):
        raise BadRequest(
            f"{what} has more than {limits.MAX_JSON_ITEMS} JSON items",
            [("", f"at most {limits.MAX_JSON_ITEMS} objects, arrays, members and elements")],
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"{what} is not valid UTF-8 (byte {exc.start})") from exc
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise BadRequest(
            f"{what} has the key {exc.args[0]!r} twice", [(exc.args[0], "duplicate key")]
        ) from exc
    except RecursionError as exc:
        raise BadRequest(f"{what} is nested too deeply") from exc
    except ValueError as exc:
        raise BadRequest(f"{what} is not valid JSON: {exc}") from exc
    # Each level opens a bracket: a document with few of them is not walked to measure it.
    brackets = raw.count(b"{") + raw.count(b"[")
    if brackets > _MAX_DEPTH and _depth(value) > _MAX_DEPTH:
        raise BadRequest(f"{what} is nested more than {_MAX_DEPTH} levels deep")
    return value


def parse_into(
    value: Any, target: message.Message, options: JsonOptions, what: str = "request body"
) -> None:
    """Merge a decoded JSON object into ``target``; any problem is a BadRequest naming the field."""
    if not isinstance(value, dict):
        raise BadRequest(f"{what} must be a JSON object, not {_json_type(value)}")
    if read_plain(value, target):
        return
    _check_tree(value, message_descriptor(target), "", not options.ignore_unknown)
    try:
        json_format.ParseDict(
            value,
            target,
            ignore_unknown_fields=options.ignore_unknown,
            # Any fields resolve their types in the message's own pool (a proxy's upstream's).
            descriptor_pool=_pool(target),
        )
    except json_format.ParseError as exc:
        field, problem = _violation(str(exc), target.DESCRIPTOR.name)
        raise BadRequest(f"invalid {field or what}: {problem}", [(field, problem)]) from exc
    except (ValueError, TypeError, AttributeError, RecursionError) as exc:
        raise BadRequest(f"invalid {what}: {exc}") from exc


def to_dict(msg: message.Message, options: JsonOptions) -> dict[str, Any]:
    """A message as its JSON object, default values included, int64 as strings."""
    written = write_plain(msg, options.proto_names)
    if written is not None:
        return written
    return json_format.MessageToDict(
        msg,
        descriptor_pool=_pool(msg),
        preserving_proto_field_name=options.proto_names,
        always_print_fields_with_no_presence=True,
    )


def _pool(msg: message.Message) -> descriptor_pool.DescriptorPool:
    # upb's pool is the same class at run time; the stubs name two.
    return msg.DESCRIPTOR.file.pool  # type: ignore[return-value]


def dump_json(value: Any) -> bytes:
    """Compact UTF-8 JSON."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def field_key(field: descriptor.FieldDescriptor, options: JsonOptions) -> str:
    """The name a field has in output JSON."""
    return field.name if options.proto_names else field.json_name


# -- turning json_format's messages into field violations -------------------------------------

_NO_FIELD = re.compile(r'has no field named "([^"]+)" at "([^"]*)"')
_MULTIPLE = re.compile(r'should not have multiple "([^"]+)" (?:oneof )?fields at "([^"]*)"')
_FAILED = re.compile(r"Failed to parse (\S+) field: ")
_AT = re.compile(r" at ([A-Za-z_][\w.\[\]]*)\.?$")


def _violation(text: str, root: str) -> tuple[str, str]:
    """(field path, problem) from a json_format ParseError message."""
    first_line = text.splitlines()[0]
    for pattern in (_NO_FIELD, _MULTIPLE):
        found = pattern.search(first_line)
        if found:
            problem = "no such field" if pattern is _NO_FIELD else "given more than once"
            return _join(_strip_root(found.group(2), root), found.group(1)), problem
    chain = ".".join(_FAILED.findall(first_line))
    problem = _FAILED.sub("", first_line).rstrip(".")
    at = _AT.search(problem)
    if at:
        problem = problem[: at.start()]
        located = _strip_root(at.group(1), root)
        if len(located) >= len(chain):
            chain = located
    return chain, problem


def _strip_root(path: str, root: str) -> str:
    if path == root:
        return ""
    return path[len(root) + 1 :] if path.startswith(root + ".") else path


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


# -- checks json_format does not make ---------------------------------------------------------

_BASE64 = re.compile(
    r"^(?:[A-Za-z0-9+/_-]{4})*(?:[A-Za-z0-9+/_-]{2}(?:==)?|[A-Za-z0-9+/_-]{3}=?)?$"
)
_BYTES_VALUE = "google.protobuf.BytesValue"


def message_descriptor(msg: message.Message | type[message.Message]) -> descriptor.Descriptor:
    """``msg``'s descriptor. The stubs type ``DESCRIPTOR`` as the pure-Python or the upb class
    (whichever backend runs); both have the descriptor API the gateway uses, typed here as one."""
    return cast(descriptor.Descriptor, msg.DESCRIPTOR)


def map_entry(field: descriptor.FieldDescriptor) -> descriptor.Descriptor:
    """The entry message of a map field (its ``key`` and ``value``)."""
    if field.message_type is None:
        raise TypeError(f"{field.full_name} is not a map field")
    return field.message_type


def _check_tree(value: Any, desc: descriptor.Descriptor, prefix: str, strict: bool) -> None:
    """Refuse what json_format would accept but must not be stored: a field under both its
    spellings, bytes that are not base64, repeated fields over the cap, and (when unknown input
    is refused) enum numbers the enum does not define; and a value of the wrong JSON type, which
    json_format refuses in Python's words."""
    if not isinstance(value, dict) or desc.full_name.startswith("google.protobuf."):
        return
    seen: dict[str, str] = {}
    for key, item in value.items():
        field = field_by_any_name(desc, key)
        path = _join(prefix, key)
        if field is None:
            if strict and not key.startswith("["):  # "[ext.name]": json_format's extensions
                problem = no_such_field(desc, key, prefix)
                raise BadRequest(f"invalid {path}: {problem}", [(path, problem)])
            continue  # ignored, as json_format is told
        if field.name in seen:
            raise BadRequest(
                f"field {field.name!r} is given twice (as {seen[field.name]!r} and {key!r})",
                [(path, "given more than once")],
            )
        seen[field.name] = key
        _check_value(item, field, path, strict)


def _check_value(item: Any, field: descriptor.FieldDescriptor, path: str, strict: bool) -> None:
    if (
        field.is_repeated
        and isinstance(item, dict | list)
        and len(item) > limits.MAX_REPEATED_ELEMENTS
    ):
        raise BadRequest(f"invalid {path}: {too_many(len(item))}", [(path, too_many(len(item)))])
    if field.is_repeated and item is not None:
        _expect(item, dict if is_map(field) else list, path)
    if is_map(field):
        if isinstance(item, dict):
            value_field = map_entry(field).fields_by_name["value"]
            for key, entry in item.items():
                _check_value(entry, value_field, f"{path}[{limits.clip(key, 64)}]", strict)
        return
    if field.is_repeated and isinstance(item, list):
        for index, entry in enumerate(item):
            _check_single(entry, field, f"{path}[{index}]", strict)
        return
    _check_single(item, field, path, strict)


def _check_single(item: Any, field: descriptor.FieldDescriptor, path: str, strict: bool) -> None:
    if item is not None:
        _check_json_type(item, field, path)
    is_bytes = field.type == descriptor.FieldDescriptor.TYPE_BYTES or (
        field.message_type is not None and field.message_type.full_name == _BYTES_VALUE
    )
    if is_bytes and isinstance(item, str) and not _BASE64.match(item):
        raise BadRequest(f"invalid {path}: not base64", [(path, "not valid base64")])
    if field.message_type is not None and not is_bytes:
        _check_tree(item, field.message_type, path, strict)
    elif field.type in _INT64_KINDS and isinstance(item, str) and not _DECIMAL.match(item):
        # int() (and so json_format) also reads "+7", "1_000" and other scripts' digits; the
        # document says what is accepted: ASCII digits with an optional minus.
        raise BadRequest(
            f"invalid {path}: {limits.shown(item)} is not a decimal integer",
            [(path, 'must be a decimal integer string like "-42"')],
        )
    elif strict and field.enum_type is not None:
        _check_enum(item, field.enum_type, path)


def _check_json_type(item: Any, field: descriptor.FieldDescriptor, path: str) -> None:
    """A JSON value of the wrong type for its field, said in JSON's words (json_format's own
    messages are Python's: "invalid literal for int() with base 10", "got 'int'")."""
    sub = field.message_type
    if sub is not None:
        # Well-known types have JSON forms of their own (a Timestamp is a string...).
        if not sub.full_name.startswith("google.protobuf."):
            _expect(item, dict, path)
    elif field.cpp_type == _F.CPPTYPE_STRING:
        _expect(item, str, path)
    elif field.cpp_type == _F.CPPTYPE_BOOL:
        _expect(item, bool, path)
    elif field.cpp_type in _INTEGER_CPP and (
        isinstance(item, bool | dict | list)
        or (isinstance(item, float) and not item.is_integer())
        # A 64-bit one's string is its usual form, with a message of its own below.
        or (isinstance(item, str) and field.type not in _INT64_KINDS and not _DECIMAL.match(item))
    ):
        problem = f"must be an integer, not {_json_type(item)} ({_shown_json(item)})"
        raise BadRequest(f"invalid {path}: {problem}", [(path, problem)])


def _expect(item: Any, kind: type, path: str) -> None:
    if not isinstance(item, kind):
        problem = f"must be {_JSON_TYPE_NAMES[kind]}, not {_json_type(item)}"
        if not isinstance(item, dict | list):
            problem += f" ({_shown_json(item)})"
        raise BadRequest(f"invalid {path}: {problem}", [(path, problem)])


def _shown_json(item: Any) -> str:
    return limits.clip(json.dumps(item), 40)


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_F = descriptor.FieldDescriptor
_INTEGER_CPP = frozenset({_F.CPPTYPE_INT32, _F.CPPTYPE_INT64, _F.CPPTYPE_UINT32, _F.CPPTYPE_UINT64})
_INT64_KINDS = frozenset(
    {_F.TYPE_INT64, _F.TYPE_SINT64, _F.TYPE_SFIXED64, _F.TYPE_UINT64, _F.TYPE_FIXED64}
)
_DECIMAL = re.compile(r"-?[0-9]+\Z")


def _check_enum(item: Any, enum: descriptor.EnumDescriptor, path: str) -> None:
    """An enum's value by name or by a number the enum defines (json_format truncates ``3.9``,
    wraps ``2**40`` and stores any number in an open enum)."""
    if item is None or enum.full_name == "google.protobuf.NullValue":
        return
    if isinstance(item, str):
        if item in enum.values_by_name:
            return
        try:
            number: Any = int(item)
        except ValueError:
            return  # json_format names the unknown enum name
    elif isinstance(item, bool) or not isinstance(item, int | float):
        raise BadRequest(
            f"invalid {path}: must be an enum name or number", [(path, "not an enum value")]
        )
    elif isinstance(item, float) and not (math.isfinite(item) and item.is_integer()):
        raise BadRequest(f"invalid {path}: must be an integer", [(path, "not an integer")])
    else:
        number = int(item)
    # The range first: upb's lookup by number wraps 2**40 to 0.
    if not _INT32_MIN <= number <= _INT32_MAX or number not in enum.values_by_number:
        problem = undefined_enum(enum, limits.clip(str(number), 24))
        raise BadRequest(f"invalid {path}: {problem}", [(path, problem)])


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _depth(value: Any) -> int:
    depth = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            depth = max(depth, level)
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            depth = max(depth, level)
            stack.extend((v, level + 1) for v in item)
    return depth


_JSON_TYPE_NAMES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "true or false",
    type(None): "null",
}


def _json_type(value: Any) -> str:
    return "a boolean" if type(value) is bool else _JSON_TYPE_NAMES.get(type(value), "a number")
