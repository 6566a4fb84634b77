"""Plain simulation dataclasses stored as ``google.protobuf.Struct`` objects.

The simulator's values (machines, storage specs) are dataclasses with ``to_dict``/``from_dict``;
a Struct keeps them protobuf in the store like every other object. Struct numbers are doubles, so
fields declared ``int`` are turned back into ints when read.
"""

from __future__ import annotations

import dataclasses
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
    """The Struct's values for dataclass ``cls``, with its ``int`` fields as ints again."""
    values = json_format.MessageToDict(struct)
    int_fields = {f.name for f in dataclasses.fields(cls) if f.type in ("int", int)}
    for name in int_fields & values.keys():
        value = values[name]
        if isinstance(value, float) and value.is_integer():
            values[name] = int(value)
    return values
