"""Plain values stored as Structs: the same bytes as Struct.update writes, so a write of an
unchanged machine is still recognised as unchanged and stored data stays readable."""

from __future__ import annotations

from google.protobuf import struct_pb2

from app.services.plain_data import to_struct


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
