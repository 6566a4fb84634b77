from __future__ import annotations

from typing import Any

import pytest

from app.gateway.admission import NO_AUTH
from app.gateway.codec.json_mapping import JsonOptions
from app.gateway.routes import GatewayOptions

from .conftest import run, serving
from .shelf import pb


def echo(body: bytes, options: GatewayOptions | None = None) -> tuple[Any, list[Any]]:
    async def call() -> tuple[Any, list[Any]]:
        async with serving(options) as served:
            response = await served.http.post(
                "/v1/things:echo", content=body, headers={"content-type": "application/json"}
            )
            return response, served.servicer.requests

    return run(call())


BAD_BODIES = [
    ("malformed", b'{"name": ', ""),
    ("invalid-utf8", b'{"name": "\xff"}', ""),
    ("not-an-object", b"[1, 2]", ""),
    ("unknown-field", b'{"nope": 1}', "nope"),
    ("unknown-nested-field", b'{"parts": [{"nope": 1}]}', "parts[0].nope"),
    ("wrong-type", b'{"size": "abc"}', "size"),
    ("bool-for-int", b'{"count": true}', "count"),
    ("out-of-range-int32", b'{"count": 3000000000}', "count"),
    ("out-of-range-float", b'{"ratio": 1e300}', "ratio"),
    ("invalid-enum", b'{"kind": "KIND_NOPE"}', "kind"),
    ("invalid-base64", b'{"payload": "%%%"}', "payload"),
    ("duplicate-key", b'{"name": "a", "name": "b"}', "name"),
    ("json-and-proto-name", b'{"displayName": "a", "display_name": "b"}', "display_name"),
    ("two-oneof-members", b'{"url": "u", "part": {}}', "origin"),
    ("bad-timestamp", b'{"create_time": "yesterday"}', "create_time"),
    ("deep-nesting", b'{"attributes": ' + b'{"a": ' * 500 + b"1" + b"}" * 501, ""),
    ("absurd-nesting", b"[" * 100000 + b"]" * 100000, ""),
]


@pytest.mark.parametrize(
    ("body", "field"), [(b, f) for _, b, f in BAD_BODIES], ids=[i for i, _, _ in BAD_BODIES]
)
def test_bad_input_is_400_naming_the_problem(body: bytes, field: str) -> None:
    response, seen = echo(body)
    assert response.status_code == 400, response.text
    status = response.json()
    assert status["code"] == 3
    assert status["message"]
    if field:
        assert status["details"][0]["field_violations"][0]["field"] == field
    assert seen == []


# A value of the wrong JSON type: the problem in JSON's words, not Python's or protobuf's
# ("invalid literal for int() with base 10", "expected string or bytes-like object").
WRONG_TYPES = [
    (b'{"count": "three"}', "count", 'must be an integer, not a string ("three")'),
    (b'{"count": 1.5}', "count", "must be an integer, not a number (1.5)"),
    (b'{"count": true}', "count", "must be an integer, not a boolean (true)"),
    (b'{"name": 42}', "name", "must be a string, not a number (42)"),
    (b'{"name": {}}', "name", "must be a string, not an object"),
    (b'{"active": "yes"}', "active", 'must be true or false, not a string ("yes")'),
    (b'{"tags": "abc"}', "tags", 'must be an array, not a string ("abc")'),
    (b'{"tags": [1]}', "tags[0]", "must be a string, not a number (1)"),
    (b'{"labels": ["a"]}', "labels", "must be an object, not an array"),
    (b'{"labels": {"a": 1}}', "labels[a]", "must be a string, not a number (1)"),
    (b'{"parts": [1]}', "parts[0]", "must be an object, not a number (1)"),
]


@pytest.mark.parametrize(("body", "field", "problem"), WRONG_TYPES)
def test_a_value_of_the_wrong_json_type_is_named_in_json_words(
    body: bytes, field: str, problem: str
) -> None:
    response, seen = echo(body)
    assert response.status_code == 400, response.text
    status = response.json()
    assert status["message"] == f"invalid {field}: {problem}"
    assert status["details"][0]["field_violations"] == [{"field": field, "description": problem}]
    assert seen == []


def test_unknown_fields_can_be_ignored() -> None:
    options = GatewayOptions(json=JsonOptions(ignore_unknown=True), authenticate=NO_AUTH)
    response, seen = echo(b'{"name": "a", "nope": 1}', options)
    assert response.status_code == 200
    assert seen == [pb.Thing(name="a")]


def test_json_mapping_of_every_field_kind() -> None:
    body = {
        "name": "n",
        "displayName": "d",
        "size": "-9007199254740993",
        "serial": "18446744073709551615",
        "count": 3,
        "weight": "NaN",
        "ratio": 0.5,
        "active": True,
        "kind": 2,
        "payload": "AAEC",
        "tags": ["a"],
        "labels": {"k": "v"},
        "sizes": {"s": "5"},
        "createTime": "2024-01-02T03:04:05.500Z",
        "ttl": "90s",
        "mask": "displayName,tags",
        "attributes": {"x": [1, "two", None, {"y": True}]},
        "limit": "7",
        "note": "n",
        "flag": False,
        "part": {"id": "p", "index": 1},
        "parts": [{"id": "q"}],
        "kinds": ["KIND_BOOK", 2],
        "numbers": [1, "2"],
    }

    async def call() -> Any:
        async with serving() as served:
            return (await served.http.post("/v1/things:echo", json=body)).json()

    out = run(call())
    assert out["display_name"] == "d"
    assert out["size"] == "-9007199254740993"
    assert out["serial"] == "18446744073709551615"
    assert out["weight"] == "NaN"
    assert out["kind"] == "KIND_DISC"
    assert out["payload"] == "AAEC"
    assert out["sizes"] == {"s": "5"}
    assert out["create_time"] == "2024-01-02T03:04:05.500Z"
    assert out["ttl"] == "90s"
    assert out["mask"] == "displayName,tags"
    assert out["attributes"] == {"x": [1, "two", None, {"y": True}]}
    assert (out["limit"], out["note"], out["flag"]) == ("7", "n", False)
    assert out["part"] == {"id": "p", "index": 1}
    assert out["parts"] == [{"id": "q", "index": 0}]
    assert out["kinds"] == ["KIND_BOOK", "KIND_DISC"]
    assert out["numbers"] == ["1", "2"]


def test_defaults_are_emitted() -> None:
    response, _ = echo(b"{}")
    out = response.json()
    assert out["active"] is False
    assert out["count"] == 0
    assert out["tags"] == []
    assert out["kind"] == "KIND_UNSPECIFIED"
