"""The JSON schemas of protobuf messages in their proto3 JSON form, for the OpenAPI document.

Scalars, well-known types, maps, oneofs and enums as :mod:`app.gateway.codec.json_mapping` reads and
writes them, each field under its rule in the server's rule book
(:mod:`app.gateway.openapi.rules`), and the descriptions from the protos' comments. Messages become
components referenced by name.

A message read from a request is not quite the message a reply holds, so requests get components
of their own (:func:`settle_inputs` names them): the proto3 JSON mapping reads ``null`` as an unset
field (json_format does), so a request's field that is not required may be ``null``, and a
request's lists and maps hold at most :data:`app.settings.limits.MAX_REPEATED_ELEMENTS` elements.
A reply never writes ``null`` and has no such bound, so generated clients type its fields plainly.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import descriptor, descriptor_pb2
from google.rpc import status_pb2

from app.gateway.codec.json_mapping import JsonOptions, map_entry
from app.gateway.openapi.rules import (
    constrain,
    decimal_pattern,
    note,
    required_names,
)
from app.rules.rule_book import RuleBook
from app.settings import limits

Schema = dict[str, Any]

STATUS = status_pb2.Status.DESCRIPTOR.full_name

_F = descriptor.FieldDescriptor
# The patterns say the range too: json_format refuses a value that does not fit.
_INT64 = {"type": "string", "format": "int64", "pattern": decimal_pattern(-(2**63), 2**63 - 1)}
_UINT64 = {"type": "string", "format": "uint64", "pattern": decimal_pattern(0, 2**64 - 1)}
_INT32 = {"type": "integer", "format": "int32", "minimum": -(2**31), "maximum": 2**31 - 1}
# Unsigned 32-bit values exceed int32: their own format, and the range says how far.
_UINT32 = {"type": "integer", "format": "uint32", "minimum": 0, "maximum": 2**32 - 1}
# proto3 JSON writes the non-finite doubles as these strings (and reads them back).
_NON_FINITE = {"type": "string", "enum": ["NaN", "Infinity", "-Infinity"]}
_SCALARS: dict[int, Schema] = {
    _F.TYPE_DOUBLE: {"oneOf": [{"type": "number", "format": "double"}, _NON_FINITE]},
    _F.TYPE_FLOAT: {"oneOf": [{"type": "number", "format": "float"}, _NON_FINITE]},
    # 64-bit integers are JSON strings (proto3 JSON mapping): no double can hold them.
    _F.TYPE_INT64: _INT64,
    _F.TYPE_SINT64: _INT64,
    _F.TYPE_SFIXED64: _INT64,
    _F.TYPE_UINT64: _UINT64,
    _F.TYPE_FIXED64: _UINT64,
    _F.TYPE_INT32: _INT32,
    _F.TYPE_SINT32: _INT32,
    _F.TYPE_SFIXED32: _INT32,
    _F.TYPE_UINT32: _UINT32,
    _F.TYPE_FIXED32: _UINT32,
    _F.TYPE_BOOL: {"type": "boolean"},
    _F.TYPE_STRING: {"type": "string"},
    _F.TYPE_BYTES: {"type": "string", "format": "byte"},
}
WRAPPERS = frozenset(
    f"google.protobuf.{name}Value"
    for name in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
)
_ANY: Schema = {
    "type": "object",
    "description": "Any message, with its type URL in `@type` and its fields beside it.",
    "properties": {"@type": {"type": "string"}},
    "required": ["@type"],
    "additionalProperties": True,
}
_WELL_KNOWN: dict[str, Schema] = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Duration": {
        "type": "string",
        "pattern": r"^-?[0-9]+(\.[0-9]{1,9})?s$",
        "description": "A duration in seconds with up to nine fractional digits, like `1.5s`.",
    },
    "google.protobuf.FieldMask": {
        "type": "string",
        "description": "Comma-separated field paths in lowerCamelCase, like `name,labels`.",
    },
    "google.protobuf.Struct": {"type": "object", "additionalProperties": True},
    "google.protobuf.Value": {"description": "Any JSON value."},
    "google.protobuf.ListValue": {"type": "array", "items": {}},
    "google.protobuf.Empty": {"type": "object"},
    "google.protobuf.Any": _ANY,
}
_STATUS_DESCRIPTION = (
    "An error: a google.rpc.Code number, a developer-facing message, and details such as "
    "google.rpc.BadRequest field violations."
)


def reached(components: dict[str, Schema], roots: list[Any]) -> dict[str, Schema]:
    """The ``components`` that ``roots`` refer to, directly or through other components."""
    found: dict[str, Schema] = {}
    pending: list[Any] = list(roots)
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            target = node.get("$ref")
            if isinstance(target, str) and target.startswith(_REF_PREFIX):
                name = target.removeprefix(_REF_PREFIX)
                if name not in found:
                    found[name] = components[name]
                    pending.append(components[name])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return found


_REF_PREFIX = "#/components/schemas/"
# A request's own component of a message also in replies: ``edgeproto.Cloudlet.Input``.
INPUT = ".Input"
_NULL: Schema = {"type": "null"}


def settle_inputs(components: dict[str, Schema], roots: list[Any]) -> None:
    """Give each request component (``X.Input``) its final name, in ``components`` and in every
    reference from ``roots`` and the components: the message's own name where no reply holds
    the message, and the reply's component where both read alike (a message of required
    fields only)."""
    while True:
        renames = {}
        for name, schema in components.items():
            base = name.removesuffix(INPUT)
            if name != base and components.get(base, schema) == schema:
                renames[name] = base
        if not renames:
            return
        for name, base in renames.items():
            components[base] = components.pop(name)
        targets = {_REF_PREFIX + old: _REF_PREFIX + new for old, new in renames.items()}
        pending: list[Any] = [*roots, *components.values()]
        while pending:
            node = pending.pop()
            if isinstance(node, dict):
                if node.get("$ref") in targets:
                    node["$ref"] = targets[node["$ref"]]
                pending.extend(node.values())
            elif isinstance(node, list):
                pending.extend(node)


def ref(full_name: str) -> Schema:
    """A reference to the component schema of ``full_name``."""
    return {"$ref": _REF_PREFIX + full_name}


@dataclass
class Schemas:
    """Component schemas, added as operations and other schemas reference them."""

    options: JsonOptions
    comments: Mapping[str, str]
    # What the servicers check of request fields, published as JSON Schema keywords.
    rules: RuleBook = field(default_factory=RuleBook)
    components: dict[str, Schema] = field(default_factory=dict)

    def key(self, fd: descriptor.FieldDescriptor) -> str:
        """The field's name in JSON under the router's options."""
        return fd.name if self.options.proto_names else fd.json_name

    def ref(self, desc: descriptor.Descriptor, *, request: bool = False) -> Schema:
        """A reference to a message's schema (or a well-known type's JSON form, inline); with
        ``request``, to the schema of the message as a request holds it."""
        if desc.full_name in _WELL_KNOWN:
            return copy.deepcopy(_WELL_KNOWN[desc.full_name])
        if desc.full_name in WRAPPERS:
            return self.scalar(desc.fields_by_name["value"])
        name = desc.full_name + (INPUT if request else "")
        if name not in self.components:
            self.components[name] = {}  # placeholder first: messages may recurse
            self.components[name] = self.message(desc, request=request)
        return ref(name)

    def message(
        self,
        desc: descriptor.Descriptor,
        exclude: frozenset[str] = frozenset(),
        *,
        request: bool = False,
    ) -> Schema:
        """A message's JSON object schema, without the top-level fields in ``exclude``; with
        ``request``, as a request holds it (null for an unset field, bounded lists)."""
        schema: Schema = {"type": "object"}
        text = self.comments.get(desc.full_name) or _status_text(desc)
        oneofs = _real_oneofs(desc)
        notes = [_oneof_note(o, self) for o in oneofs]
        description = "\n\n".join(t for t in (text, *notes) if t)
        if description:
            schema["description"] = description
        required_here = required_names(self.rules, desc, self.key)
        schema["properties"] = {
            self.key(fd): self.field(
                fd, request=request, nullable=self.key(fd) not in required_here
            )
            for fd in desc.fields
            if fd.name not in exclude
        }
        required = [n for n in required_here if n in schema["properties"]]
        if required:
            schema["required"] = required
        if not self.options.ignore_unknown:
            schema["additionalProperties"] = False  # unknown fields are refused with 400
        return schema

    def field(
        self, fd: descriptor.FieldDescriptor, *, request: bool = False, nullable: bool = False
    ) -> Schema:
        """A field's schema with its comment, oneof membership and deprecation; in a request,
        ``nullable`` admits ``null`` (the unset field, as json_format reads it)."""
        schema = self.constrained(fd, request=request)
        if request and nullable:
            schema = {"anyOf": [schema, dict(_NULL)]}
        notes = [self.comments.get(fd.full_name, ""), note(self.rules, fd)]
        oneof = fd.containing_oneof
        if oneof is not None and oneof in _real_oneofs(oneof.containing_type):
            others = ", ".join(f"`{self.key(f)}`" for f in oneof.fields)
            notes.append(f"Part of oneof `{oneof.name}`: at most one of {others} is set.")
        description = " ".join(n for n in notes if n)
        if description:
            schema["description"] = description
        if fd.GetOptions().deprecated:
            schema["deprecated"] = True
        return schema

    def constrained(self, fd: descriptor.FieldDescriptor, *, request: bool = False) -> Schema:
        """The field's value schema under its rule in the book (the servicers')."""
        schema = self.value(fd, request=request)
        rule = self.rules.field_rule(fd.full_name)
        return schema if rule is None else constrain(schema, fd, rule)

    def value(self, fd: descriptor.FieldDescriptor, *, request: bool = False) -> Schema:
        """The schema of a field's JSON value: maps, arrays, messages, enums or scalars. A
        request's lists and maps are bounded (the gateway's cap on repeated elements)."""
        bound = {"maxItems": limits.MAX_REPEATED_ELEMENTS} if request else {}
        if is_map(fd):
            entry = map_entry(fd)
            schema: Schema = {
                "type": "object",
                "additionalProperties": self.single(entry.fields_by_name["value"], request=request),
            }
            key = entry.fields_by_name["key"]
            if key.type != _F.TYPE_STRING:  # map keys are JSON strings of the key's type
                schema["propertyNames"] = _map_key(key)
            if request:
                schema["maxProperties"] = limits.MAX_REPEATED_ELEMENTS
            return schema
        if fd.is_repeated:
            return {"type": "array", "items": self.single(fd, request=request), **bound}
        return self.single(fd, request=request)

    def single(self, fd: descriptor.FieldDescriptor, *, request: bool = False) -> Schema:
        """One (non-repeated) value of the field's type."""
        if fd.message_type is not None:
            return self.ref(fd.message_type, request=request)
        if fd.enum_type is not None:
            return self.enum(fd.enum_type)
        return self.scalar(fd)

    def scalar(self, fd: descriptor.FieldDescriptor) -> Schema:
        """A scalar field's schema (a fresh copy, safe to annotate)."""
        return copy.deepcopy(_SCALARS[fd.type])

    def stream_item(self, output: str, response_body: str, reply: Schema) -> Schema:
        """A reference to the schema of one line (or event) of a stream of ``output`` replies:
        a component, so that a generated client has a type to read each line with."""
        name = f"{output}{'.' + response_body if response_body else ''}.StreamItem"
        if name not in self.components:
            self.components[name] = {
                "type": "object",
                "description": (
                    "One line of a stream: a reply in `result`, or in `error` the error that "
                    "ended the stream (its last line). Exactly one of them is set."
                ),
                "properties": {"result": reply, "error": ref(STATUS)},
                "minProperties": 1,
                "maxProperties": 1,
                "additionalProperties": False,
            }
        return ref(name)

    def enum(self, desc: descriptor.EnumDescriptor) -> Schema:
        """A reference to an enum's schema: a string enum of its value names."""
        if desc.full_name == "google.protobuf.NullValue":
            return {"type": "null"}
        if desc.full_name not in self.components:
            # Names on the way in and out; numbers are accepted too (proto3 enums are open:
            # any number unless unknown input is refused, when only the enum's own).
            names = {"type": "string", "enum": [v.name for v in desc.values]}
            numbers: Schema = dict(_INT32)
            if not self.options.ignore_unknown:  # a number the enum lacks is refused
                numbers = {"type": "integer", "enum": sorted({v.number for v in desc.values})}
            schema: Schema = {"anyOf": [names, numbers]}
            lines = [self.comments.get(desc.full_name, "")]
            for value in desc.values:
                text = self.comments.get(f"{desc.full_name}.{value.name}")
                if text:
                    lines.append(f"- `{value.name}`: {' '.join(text.split())}")
            description = "\n".join(line for line in lines if line).strip()
            if description:
                schema["description"] = description
            self.components[desc.full_name] = schema
        return ref(desc.full_name)


def _map_key(key: descriptor.FieldDescriptor) -> Schema:
    """The JSON property-name schema of a map's non-string key (an integer or a bool)."""
    if key.type == _F.TYPE_BOOL:
        return {"enum": ["true", "false"]}
    if key.type in (
        _F.TYPE_INT64,
        _F.TYPE_SINT64,
        _F.TYPE_SFIXED64,
        _F.TYPE_UINT64,
        _F.TYPE_FIXED64,
    ):
        return {"pattern": _SCALARS[key.type]["pattern"]}
    bounds = _SCALARS[key.type]
    return {"pattern": decimal_pattern(bounds["minimum"], bounds["maximum"])}


def _status_text(desc: descriptor.Descriptor) -> str:
    return _STATUS_DESCRIPTION if desc.full_name == STATUS else ""


def _oneof_note(oneof: descriptor.OneofDescriptor, schemas: Schemas) -> str:
    members = ", ".join(f"`{schemas.key(f)}`" for f in oneof.fields)
    return f"Oneof `{oneof.name}`: at most one of {members}."


def _real_oneofs(desc: descriptor.Descriptor) -> list[descriptor.OneofDescriptor]:
    """Oneofs written in the .proto, without the synthetic ones of proto3 ``optional`` fields."""
    proto = descriptor_pb2.DescriptorProto()
    desc.CopyToProto(proto)
    synthetic = {
        f.oneof_index for f in proto.field if f.proto3_optional and f.HasField("oneof_index")
    }
    return [o for index, o in enumerate(desc.oneofs) if index not in synthetic]


def is_map(fd: descriptor.FieldDescriptor) -> bool:
    """Whether the field is a protobuf map (a repeated entry message underneath)."""
    return fd.message_type is not None and fd.is_repeated and fd.message_type.GetOptions().map_entry


def is_well_known(desc: descriptor.Descriptor) -> bool:
    """Whether the message has a JSON form of its own (a well-known type or a wrapper)."""
    return desc.full_name in _WELL_KNOWN or desc.full_name in WRAPPERS
