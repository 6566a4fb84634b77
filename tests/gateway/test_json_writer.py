"""The compiled reply writer gives exactly json_format's JSON, key for key and in order."""

from __future__ import annotations

import json
import math

import pytest
from google.protobuf import json_format, struct_pb2
from google.protobuf.message import Message

from app.gateway.codec.json_writer import _holds_any, write_plain
from app.gateway.registry import Registry

from .shelf import pb
from .test_json_reader import _sample

_REGISTRY = list(Registry.from_package("gen"))
# Well-known types at the top are json_format's own (the writer leaves them to it).
_MESSAGES = sorted(
    (
        t
        for t in {m.input_type for m in _REGISTRY} | {m.output_type for m in _REGISTRY}
        if not t.DESCRIPTOR.full_name.startswith("google.protobuf.")
    ),
    key=lambda t: t.DESCRIPTOR.full_name,
)


def _same_as_json_format(msg: Message, proto_names: bool) -> None:
    expected = json_format.MessageToDict(
        msg, preserving_proto_field_name=proto_names, always_print_fields_with_no_presence=True
    )
    written = write_plain(msg, proto_names)
    assert written is not None
    # Compared as text, so the order of keys counts too (and NaN equals NaN).
    assert json.dumps(written) == json.dumps(expected)


@pytest.mark.parametrize("proto_names", [True, False], ids=["proto-names", "json-names"])
@pytest.mark.parametrize("message_type", _MESSAGES, ids=lambda t: t.DESCRIPTOR.full_name)
def test_every_seed_message_is_written_as_json_format_writes_it(
    message_type: type[Message], proto_names: bool
) -> None:
    if _holds_any(message_type.DESCRIPTOR, set()):
        assert write_plain(message_type(), proto_names) is None  # Any resolves at run time
        return
    _same_as_json_format(message_type(), proto_names)  # every default
    filled = json_format.ParseDict(_sample(message_type.DESCRIPTOR), message_type())
    _same_as_json_format(filled, proto_names)


@pytest.mark.parametrize("proto_names", [True, False], ids=["proto-names", "json-names"])
def test_every_kind_of_value_is_written_as_json_format_writes_it(proto_names: bool) -> None:
    thing = pb.Thing(
        name="n",
        size=-(2**62),
        serial=2**64 - 1,
        count=-7,
        weight=math.nan,
        ratio=0.1,
        active=True,
        payload=b"\x00\xff",
        tags=["a", "b"],
        labels={"k": "v"},
        sizes={"big": 2**40},
        kinds=[1, 2],
        numbers=[1, -2],
        parts=[pb.Thing.Part()],
        url="u",
    )
    thing.create_time.FromSeconds(1_700_000_000)
    thing.ttl.FromSeconds(90)
    thing.mask.paths.append("name")
    thing.attributes.update({"a": [1, "x", None], "b": {"c": True}})
    thing.limit.value = 5
    thing.note.value = "note"
    _same_as_json_format(thing, proto_names)
    for infinite in (math.inf, -math.inf):
        _same_as_json_format(pb.Thing(weight=infinite, ratio=infinite), proto_names)


def test_an_unknown_number_in_an_open_enum_is_written_as_the_number() -> None:
    thing = pb.Thing(kinds=[1, 7])
    _same_as_json_format(thing, True)


def test_a_well_known_type_at_the_top_is_left_to_json_format() -> None:
    assert write_plain(struct_pb2.Struct(), True) is None
