"""Checks every request message passes, whichever transport decoded it.

JSON requests are checked on their JSON tree before conversion
(:mod:`app.gateway.codec.json_mapping`), where a wrong number is still visible (``3.9`` or ``2**40``
for an enum is truncated or wrapped by the conversion); binary gRPC requests are checked here once
parsed: no repeated or map field over :data:`app.settings.limits.MAX_REPEATED_ELEMENTS` and, when
unknown input is refused, no enum number the enum does not define. Domain ranges (a latitude, a
port) are the servicers' validation.
"""

from __future__ import annotations

from typing import cast

from google.protobuf import descriptor
from google.protobuf import message as message_pb

from app.settings import limits

Violation = tuple[str, str]


def request_violations(msg: message_pb.Message, strict: bool = True) -> list[Violation]:
    """Violations of ``msg`` at any depth (at most :data:`app.settings.limits.MAX_VIOLATIONS`)."""
    found: list[Violation] = []
    stack: list[tuple[message_pb.Message, str]] = [(msg, "")]
    while stack and len(found) < limits.MAX_VIOLATIONS:
        current, path = stack.pop()
        if not _worth_walking(cast(descriptor.Descriptor, current.DESCRIPTOR)):
            continue
        for field, value in current.ListFields():
            where = f"{path}.{field.name}" if path else field.name
            if field.is_repeated:
                if len(value) > limits.MAX_REPEATED_ELEMENTS:
                    found.append((where, too_many(len(value))))
                    continue
                if field.message_type is not None and is_map(field):
                    value_field = field.message_type.fields_by_name["value"]
                    items = [(f"{where}[{k}]", value[k]) for k in value]
                    _check_values(value_field, items, strict, found, stack)
                else:
                    items = [(f"{where}[{i}]", item) for i, item in enumerate(value)]
                    _check_values(field, items, strict, found, stack)
            else:
                _check_values(field, [(where, value)], strict, found, stack)
    return found[: limits.MAX_VIOLATIONS]


def too_many(count: int) -> str:
    """What is wrong with a repeated field of ``count`` elements over the cap."""
    return f"has {count} elements; at most {limits.MAX_REPEATED_ELEMENTS} are allowed"


def undefined_enum(enum: descriptor.EnumDescriptor, number: object) -> str:
    """What is wrong with an enum number the enum does not define."""
    return f"{number} is not a value of {enum.name}"


def _check_values(
    field: descriptor.FieldDescriptor,
    items: list[tuple[str, object]],
    strict: bool,
    found: list[Violation],
    stack: list[tuple[message_pb.Message, str]],
) -> None:
    if field.message_type is not None:
        stack.extend((item, where) for where, item in items)  # type: ignore[misc]
    elif strict and field.enum_type is not None:
        numbers = field.enum_type.values_by_number
        found.extend(
            (where, undefined_enum(field.enum_type, item))
            for where, item in items
            if item not in numbers
        )


_WORTH: dict[str, bool] = {}


def _worth_walking(desc: descriptor.Descriptor) -> bool:
    """Whether a message of this type can hold anything checked (cached per type)."""
    known = _WORTH.get(desc.full_name)
    if known is None:
        _WORTH[desc.full_name] = True  # a recursive type is walked, to be safe
        known = any(
            f.is_repeated
            or f.enum_type is not None
            or (f.message_type is not None and _worth_walking(f.message_type))
            for f in desc.fields
        )
        _WORTH[desc.full_name] = known
    return known


def is_map(field: descriptor.FieldDescriptor) -> bool:
    """Whether a field is a map (a repeated entry message)."""
    return (
        field.message_type is not None
        and field.is_repeated
        and field.message_type.GetOptions().map_entry
    )
