"""The plain-body reader gives exactly json_format's message, or steps aside untouched."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from google.protobuf import descriptor, json_format
from google.protobuf.message import Message

from app.gateway.codec.json_reader import read_plain
from app.gateway.registry import Registry

from .shelf import pb

_F = descriptor.FieldDescriptor
_REQUESTS = sorted(
    {method.input_type for method in Registry.from_package("gen")}, key=lambda t: t.__name__
)


def _sample(desc: descriptor.Descriptor, depth: int = 0) -> dict[str, Any]:
    """A JSON body setting every field a plain reader can take (one member per oneof), with
    both spellings of names mixed, two list elements and two map entries."""
    body: dict[str, Any] = {}
    oneofs: set[str] = set()
    for index, fd in enumerate(desc.fields):
        if fd.containing_oneof is not None:
            if fd.containing_oneof.name in oneofs:
                continue
            oneofs.add(fd.containing_oneof.name)
        value = _value(fd, depth, index)
        if value is not None:
            body[fd.json_name if index % 2 else fd.name] = value
    return body


def _value(fd: descriptor.FieldDescriptor, depth: int, seed: int) -> Any:
    entry = fd.message_type
    if entry is not None and entry.GetOptions().map_entry:
        if entry.fields_by_name["key"].type != _F.TYPE_STRING:
            return None  # numbers as keys are strings in JSON: the general path's conversion
        value = _single(entry.fields_by_name["value"], depth, seed)
        return None if value is None else {"k1": value, "k2": copy.deepcopy(value)}
    single = _single(fd, depth, seed)
    if single is None or not fd.is_repeated:
        return single
    return [single, _single(fd, depth, seed + 1)]


def _single(fd: descriptor.FieldDescriptor, depth: int, seed: int) -> Any:
    if fd.message_type is not None:
        if fd.message_type.full_name.startswith("google.protobuf.") or depth > 2:
            return None
        return _sample(fd.message_type, depth + 1)
    if fd.type == _F.TYPE_STRING:
        return f"value-{seed}-é"
    if fd.type == _F.TYPE_BOOL:
        return seed % 2 == 0
    if fd.type == _F.TYPE_ENUM:
        values = fd.enum_type.values
        return values[seed % len(values)].name
    if fd.cpp_type in (_F.CPPTYPE_INT32, _F.CPPTYPE_INT64, _F.CPPTYPE_UINT32, _F.CPPTYPE_UINT64):
        return 7 + seed
    return None


@pytest.mark.parametrize("request_type", _REQUESTS, ids=lambda t: t.DESCRIPTOR.full_name)
def test_every_seed_request_reads_as_json_format_reads_it(request_type: type[Message]) -> None:
    body = _sample(request_type.DESCRIPTOR)
    expected = json_format.ParseDict(body, request_type())
    read = request_type()
    assert read_plain(body, read)
    assert read == expected


def _thing() -> Message:
    return pb.Thing(name="kept", tags=["old"], labels={"old": "x"}, parts=[pb.Thing.Part()])


def test_merging_replaces_lists_and_maps_and_keeps_other_fields_as_json_format_does() -> None:
    body = {"tags": ["a", "b"], "labels": {"k": "v"}, "displayName": "d", "kinds": ["KIND_BOOK"]}
    expected = _thing()
    json_format.ParseDict(body, expected)
    read = _thing()
    assert read_plain(body, read)
    assert read == expected


@pytest.mark.parametrize(
    "body",
    [
        {"count": "7"},  # a number as a string
        {"count": True},
        {"count": 2**31},
        {"count": 7.0},
        {"size": 2**63},
        {"serial": -1},
        {"name": None},
        {"name": 7},
        {"name": "\ud800"},
        {"kind": 1},  # an enum by number
        {"kind": "KIND_NOPE"},
        {"nope": 1},
        {"display_name": "a", "displayName": "b"},
        {"url": "u", "part": {}},  # two members of one oneof
        {"weight": 1.5},
        {"payload": "AA=="},
        {"create_time": "2020-01-01T00:00:00Z"},
        {"tags": "one"},
        {"tags": ["a", None]},
        {"tags": ["x"] * 1001},
        {"labels": {"k": 1}},
        {"parts": [{"nope": 1}]},
        {"parts": [None]},
    ],
    ids=repr,
)
def test_anything_but_a_plain_body_is_left_to_the_general_path_untouched(
    body: dict[str, Any],
) -> None:
    target = _thing()
    before = target.SerializeToString()
    assert not read_plain(body, target)
    assert target.SerializeToString() == before
