"""A :class:`~app.rules.rule_book.RuleBook`'s field rules as JSON Schema keywords, for the
OpenAPI document.

A field's rule constrains its schema wherever the message appears; an RPC's own rules (the
book's ``calls``) are merged into that operation's request: a copy of the message's schema that
requires the paths (no longer null) and narrows their values, or a required query parameter.

proto3 cannot tell an unset scalar from its zero value, and a rule applies to values that are
set: so a field that is not required admits its zero value (``""``, ``0``) besides the values
the rule allows. A required field excludes it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from google.protobuf import descriptor

from app.rules.field_rule import Rule
from app.rules.rule_book import RuleBook

Schema = dict[str, Any]
_F = descriptor.FieldDescriptor
_STRING_INTS = frozenset(
    {_F.TYPE_INT64, _F.TYPE_SINT64, _F.TYPE_SFIXED64, _F.TYPE_UINT64, _F.TYPE_FIXED64}
)
_FLOATS = frozenset({_F.TYPE_DOUBLE, _F.TYPE_FLOAT})
_NULL = {"type": "null"}
_COMPONENTS = "#/components/schemas/"


def constrain(schema: Schema, fd: descriptor.FieldDescriptor, rule: Rule) -> Schema:
    """``schema`` (the field's value schema: an array for a repeated field) under ``rule``."""
    if fd.is_repeated:
        if rule.max_items is not None:
            schema["maxItems"] = min(rule.max_items, schema.get("maxItems", rule.max_items))
        if rule.min_items is not None:
            schema["minItems"] = rule.min_items
        if rule.unique:
            schema["uniqueItems"] = True
        schema["items"] = element(schema["items"], fd, rule, required=True)
        return schema
    return element(schema, fd, rule, required=rule.required)


def element(
    schema: Schema, fd: descriptor.FieldDescriptor, rule: Rule, *, required: bool
) -> Schema:
    """One value's schema under ``rule``; ``required``: its zero value is refused, not unset."""
    if fd.message_type is not None:
        return schema  # a message is required (or not) by its parent's `required` list
    if fd.type == _F.TYPE_STRING:
        return _string(schema, rule, required)
    if fd.type in _STRING_INTS:
        return _string_int(schema, fd, rule, required)
    return _number(schema, fd, rule, required)


def _string(schema: Schema, rule: Rule, required: bool) -> Schema:
    if rule.pattern is not None:
        # An empty string is an unset field, which a field that is not required may be.
        schema["pattern"] = rule.pattern if required else f"^$|{rule.pattern}"
    if rule.max_length is not None:
        schema["maxLength"] = rule.max_length
    minimum = rule.min_length or 0
    if required:
        minimum = max(minimum, 1)
    if minimum and required:
        schema["minLength"] = minimum
    elif rule.min_length:
        # Not required: empty (unset) or at least min_length characters.
        return {"anyOf": [{"const": ""}, {**schema, "minLength": rule.min_length}]}
    if rule.choices:
        schema["enum"] = list(rule.choices) if required else ["", *rule.choices]
    if rule.reserved:
        schema["not"] = {"enum": list(rule.reserved)}
    return schema


def decimal_pattern(low: int, high: int) -> str:
    """A regex of the decimal strings (ASCII digits, optional minus) from ``low`` to ``high``."""
    positive = _up_to(high) if high >= 0 else None
    negative = f"-{_up_to(-low)}" if low < 0 else None
    return "^(" + "|".join(p for p in (negative, positive) if p) + ")$"


def _up_to(n: int) -> str:
    """Digit strings (leading zeros allowed) of a value from 0 to ``n``."""
    text = str(n)
    length = len(text)
    branches = [f"[0-9]{{1,{length - 1}}}"] if length > 1 else []
    for index, char in enumerate(text):
        digit = int(char)
        if digit:
            rest = length - index - 1
            lower = "0" if digit == 1 else f"[0-{digit - 1}]"
            branches.append(text[:index] + lower + (f"[0-9]{{{rest}}}" if rest else ""))
    branches.append(text)
    return "0*(" + "|".join(branches) + ")"


def _string_int(
    schema: Schema, fd: descriptor.FieldDescriptor, rule: Rule, required: bool
) -> Schema:
    # 64-bit integers are strings: a range is said by the pattern.
    if rule.choices or rule.reserved:
        raise ValueError(f"no JSON Schema for {rule} on a 64-bit integer")
    signed = fd.type not in (_F.TYPE_UINT64, _F.TYPE_FIXED64)
    low = int(rule.minimum) if rule.minimum is not None else (-(2**63) if signed else 0)
    high = int(rule.maximum) if rule.maximum is not None else (2**63 - 1 if signed else 2**64 - 1)
    schema["pattern"] = decimal_pattern(low, high)
    if required or not low <= 0 <= high:
        schema["not"] = {"pattern": "^-?0+$"}
        if not required:
            return {"anyOf": [{"const": "0"}, schema]}
    return schema


def _number(schema: Schema, fd: descriptor.FieldDescriptor, rule: Rule, required: bool) -> Schema:
    if fd.type in _FLOATS and (rule.minimum is not None or rule.maximum is not None):
        # A range refuses NaN and the infinities: only finite numbers are left.
        schema = dict(schema["oneOf"][0])
    if rule.minimum is not None:
        schema["minimum"] = rule.minimum
    if rule.maximum is not None:
        schema["maximum"] = rule.maximum
    if rule.choices:
        schema["enum"] = list(rule.choices)
    zero_allowed = _admits_zero(rule)
    if required and zero_allowed:
        schema["not"] = {"const": 0}
    elif not required and not zero_allowed:
        return {"anyOf": [{"const": 0}, schema]}  # zero is the unset field
    return schema


def _admits_zero(rule: Rule) -> bool:
    if rule.choices:
        return 0 in rule.choices
    low = rule.minimum if rule.minimum is not None else 0
    high = rule.maximum if rule.maximum is not None else 0
    return low <= 0 <= high


def required_names(
    book: RuleBook, desc: descriptor.Descriptor, key: Callable[[descriptor.FieldDescriptor], str]
) -> list[str]:
    """JSON names of the fields of ``desc`` whose rule makes them required everywhere."""
    names = []
    for fd in desc.fields:
        rule = book.field_rule(fd.full_name)
        if rule is not None and rule.required and not fd.is_repeated:
            names.append(key(fd))
    return names


def note(book: RuleBook, fd: descriptor.FieldDescriptor) -> str:
    """What the field's rule says beyond JSON Schema, for its description."""
    rule = book.field_rule(fd.full_name)
    return rule.note if rule is not None else ""


# -- one RPC's own rules ------------------------------------------------------------------------


def narrowed(
    schema: Schema,
    desc: descriptor.Descriptor,
    rules: dict[str, Rule],
    key: Callable[[descriptor.FieldDescriptor], str],
    components: dict[str, Schema],
) -> Schema:
    """``schema`` (of a request's ``desc``) with this RPC's ``rules`` merged in: a copy in which
    each rule's path is required (no longer null) and narrowed, the messages on the way inlined
    from ``components``. One schema rather than ``allOf`` of the message and a partial one: a
    field that is null or an object in one and an object in the other is more than generated
    clients can merge."""
    root = _inlined(schema, components)
    for path, rule in rules.items():
        node, fields = root, _resolve(desc, path)
        for fd in fields[:-1]:
            child = _set(node, key(fd), components)
            node = child
            if fd.is_repeated:
                node = child["items"] = _inlined(child["items"], components)
        last = fields[-1]
        name = key(last)
        if rule.required or rule.min_items:
            target = _set(node, name, components)
        else:
            target = node["properties"][name]
            options = target.get("anyOf", [])
            if len(options) == 2 and options[1] == _NULL:
                target = options[0]  # the value's schema, still or null
        _merge(target, _narrowing(last, rule))
        if last.is_repeated and "items" in target:
            target["items"] = element(target["items"], last, rule, required=True)
    return root


def _set(node: Schema, name: str, components: dict[str, Schema]) -> Schema:
    """The property ``name`` of ``node``, made required: not null, its message inlined."""
    if name not in node.setdefault("required", []):
        node["required"].append(name)
    schema = node["properties"][name]
    options = schema.get("anyOf", [])
    if len(options) == 2 and options[1] == _NULL:  # a request's field: the value or null
        schema = {**options[0], **{k: v for k, v in schema.items() if k != "anyOf"}}
    schema = node["properties"][name] = _inlined(schema, components)
    return schema


def _inlined(schema: Schema, components: dict[str, Schema]) -> Schema:
    """A copy of ``schema``; a reference to a message's component becomes a copy of it."""
    target = schema.get("$ref", "")
    if target.startswith(_COMPONENTS):
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return {**copy.deepcopy(components[target.removeprefix(_COMPONENTS)]), **rest}
    return copy.deepcopy(schema)


def _merge(target: Schema, extra: Schema) -> None:
    """``extra``'s keywords added to ``target``'s, both to hold."""
    for keyword, value in extra.items():
        if keyword not in target:
            target[keyword] = value
        elif keyword == "not":
            target["not"] = {"anyOf": [target["not"], value]}
        elif keyword in ("minLength", "minItems"):
            target[keyword] = max(target[keyword], value)
        elif keyword == "maxItems":
            target[keyword] = min(target[keyword], value)
        elif keyword == "description":
            target[keyword] = f"{target[keyword]} {value}"
        else:
            target[keyword] = value


def _narrowing(fd: descriptor.FieldDescriptor, rule: Rule) -> Schema:
    """Keywords that, beside the field's own schema, say what ``rule`` adds for this RPC."""
    schema: Schema = {}
    if fd.is_repeated:
        if rule.min_items is not None:
            schema["minItems"] = rule.min_items
        if rule.max_items is not None:
            schema["maxItems"] = rule.max_items
        return schema
    if rule.required and fd.message_type is None:
        schema.update(not_zero(fd))
    if rule.note:
        schema["description"] = rule.note
    return schema


def not_zero(fd: descriptor.FieldDescriptor) -> Schema:
    """Keywords refusing a scalar field's zero value (which is the unset field)."""
    if fd.type in (_F.TYPE_STRING, _F.TYPE_BYTES):
        return {"minLength": 1}
    if fd.type in _STRING_INTS:
        return {"not": {"pattern": "^-?0+$"}}
    if fd.type == _F.TYPE_BOOL:
        return {"const": True}
    if fd.enum_type is not None:
        zero = fd.enum_type.values_by_number[0].name
        return {"not": {"enum": [zero, 0]}}
    return {"not": {"const": 0}}


def _resolve(desc: descriptor.Descriptor, path: str) -> list[descriptor.FieldDescriptor]:
    fields = []
    for name in path.split("."):
        fd = desc.fields_by_name[name]
        fields.append(fd)
        if fd.message_type is not None:
            desc = fd.message_type
    return fields
