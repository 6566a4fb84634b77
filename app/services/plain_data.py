"""Plain simulation dataclasses stored as ``google.protobuf.Struct`` objects.

The simulator's values (machines, storage specs) are dataclasses with ``to_dict``/``from_dict``;
a Struct keeps them protobuf in the store like every other object. Struct numbers are doubles, so
fields declared ``int`` are turned back into ints when read.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2


def to_struct(values: Mapping[str, Any]) -> struct_pb2.Struct:
    """A Struct holding ``values`` (JSON-ready: str, bool, int, float)."""
    struct = struct_pb2.Struct()
    fields = struct.fields
    for key, value in values.items():
        # Scalars go straight into their Value: Struct.update tries every JSON type on each
        # (a third of writing a machine, which the reconciler does for every change).
        if isinstance(value, str):
            fields[key].string_value = value
        elif isinstance(value, bool):
            fields[key].bool_value = value
        elif isinstance(value, int | float):
            fields[key].number_value = value
        else:
            struct.update({key: value})
    return struct


def from_struct(cls: type, struct: struct_pb2.Struct) -> dict[str, Any]:
    """The Struct's values for dataclass ``cls``, with its ``int`` fields as ints again (as
    ``json_format.MessageToDict`` reads them, in under half its time: the reconciler reads back
    every machine it writes)."""
    values: dict[str, Any] = {}
    for key, value in struct.fields.items():
        kind = value.WhichOneof("kind")
        if kind in _SCALARS:
            values[key] = getattr(value, kind)
        elif kind == "null_value":
            values[key] = None
        else:  # a nested Struct or list (or no value: json_format says what is wrong)
            values[key] = json_format.MessageToDict(value)
    for name in _int_fields(cls) & values.keys():
        number = values[name]
        if isinstance(number, float) and number.is_integer():
            values[name] = int(number)
    return values


_SCALARS = frozenset(("string_value", "number_value", "bool_value"))


@functools.cache
def _int_fields(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls) if f.type in ("int", int))
