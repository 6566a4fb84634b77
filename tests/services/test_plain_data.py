"""Plain values stored as Structs: the same bytes as Struct.update writes, so a write of an
unchanged machine is still recognised as unchanged and stored data stays readable; read back
as json_format reads them."""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf import json_format, struct_pb2

from app.services.plain_data import from_struct, to_struct


def test_a_struct_is_built_as_struct_update_builds_it() -> None:
    values = {
        "name": "m-1",
        "ready": True,
        "failed": False,
        "index": 3,
        "share": 0.25,
        "nothing": None,
        "nested": {"a": 1, "b": ["x", 2.5, None]},
        "list": [True, "y"],
        "": "empty key",
    }
    expected = struct_pb2.Struct()
    expected.update(values)
    built = to_struct(values)
    assert built == expected
    assert built.SerializeToString() == expected.SerializeToString()


@dataclass
class _Plain:
    index: int
    share: float


def test_a_struct_is_read_back_as_json_format_reads_it_with_ints_again() -> None:
    values = {
        "name": "m-1",
        "ready": True,
        "index": 3,
        "share": 2.0,  # a float field keeps its float
        "nothing": None,
        "nested": {"a": 1, "b": ["x", 2.5, None]},
        "list": [True, "y"],
        "": "empty key",
    }
    struct = to_struct(values)
    expected = json_format.MessageToDict(struct)
    expected["index"] = 3
    read = from_struct(_Plain, struct)
    assert read == expected
    assert type(read["index"]) is int and type(read["share"]) is float
