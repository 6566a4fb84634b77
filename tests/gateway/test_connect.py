"""The Connect protocol over the shelf API: unary (POST, GET), streams, errors, limits."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
from typing import Any

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2

from app.gateway.admission import NO_AUTH
from app.gateway.errors import GatewayError
from app.gateway.protocols.connect import CODE_NAMES
from app.gateway.routes import GatewayOptions, create_app
from tests.harness import uvicorn_serving

from .conftest import run, serving, shelf_registry
from .shelf import SERVICE, ShelfServicer, pb
from .wire import frame, frames

JSON = {"content-type": "application/json"}
PROTO = {"content-type": "application/proto"}
ECHO = "/api/portico.test.v1.Shelf/EchoThing"


def connect_post(path: str, body: Any, headers: dict[str, str] | None = None, **options: Any):
    """POST one request to the app; the reply (status, headers, content)."""

    async def scenario() -> Any:
        async with serving(GatewayOptions(authenticate=NO_AUTH, **options)) as served:
            content = body if isinstance(body, bytes) else json.dumps(body).encode()
            return await served.http.post(path, content=content, headers=headers or JSON)

    return run(scenario())


def connect_get(path: str, params: dict[str, str]) -> Any:
    async def scenario() -> Any:
        async with serving() as served:
            return await served.http.get(path, params=params)

    return run(scenario())


def test_unary_json_uses_json_names_and_both_spellings_in() -> None:
    reply = connect_post(ECHO, {"display_name": "A", "size": "12", "tags": ["x"]})
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/json"
    body = reply.json()
    assert body["displayName"] == "A" and body["size"] == "12" and "display_name" not in body


def test_unary_proto_round_trips_binary() -> None:
    thing = pb.Thing(name="n", size=1 << 40, payload=b"\x00\xff", labels={"a": "b"})
    reply = connect_post(ECHO, thing.SerializeToString(), PROTO)
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/proto"
    assert pb.Thing.FromString(reply.content) == thing


def test_canonical_path_speaks_connect_when_asked_and_rest_otherwise() -> None:
    path = "/portico.test.v1.Shelf/EchoThing"
    connect = connect_post(path, {"display_name": "A"}, {**JSON, "connect-protocol-version": "1"})
    assert connect.json()["displayName"] == "A"
    binary = connect_post(path, pb.Thing(name="b").SerializeToString(), PROTO)
    assert pb.Thing.FromString(binary.content).name == "b"
    rest = connect_post(path, {"display_name": "A"})
    assert rest.json()["display_name"] == "A"  # the REST route keeps its proto names
    rest_error = connect_post(path, {"nope": 1})
    assert rest_error.json()["code"] == 3  # google.rpc.Status, not Connect's error


@pytest.mark.parametrize("code", [c for c in grpc.StatusCode if c is not grpc.StatusCode.OK])
def test_every_code_has_connect_name_and_http_status(code: grpc.StatusCode) -> None:
    reply = connect_post("/api/portico.test.v1.Shelf/Fail", {"code": code.value[0], "message": "m"})
    assert reply.json() == {"code": CODE_NAMES[code], "message": "m"}
    assert reply.status_code == GatewayError(code, "").http_status
    assert reply.headers["content-type"] == "application/json"


def test_error_details_travel_as_connect_details() -> None:
    request = {"code": 3, "message": "m", "rich": True}
    reply = connect_post("/api/portico.test.v1.Shelf/Fail", request)
    assert reply.status_code == 400
    (detail,) = reply.json()["details"]
    assert detail["type"] == "google.rpc.BadRequest"
    raw = base64.b64decode(detail["value"] + "=" * (-len(detail["value"]) % 4))
    assert error_details_pb2.BadRequest.FromString(raw).field_violations[0].field == "name"


def test_crash_is_internal_and_leaks_nothing() -> None:
    reply = connect_post("/api/portico.test.v1.Shelf/Fail", {"crash": True})
    assert reply.status_code == 500
    assert reply.json() == {"code": "internal", "message": "internal error"}


@pytest.mark.parametrize(
    ("body", "headers", "status", "code", "words"),
    [
        (b"{not json", JSON, 400, "invalid_argument", "not valid JSON"),
        (b'{"size": "big"}', JSON, 400, "invalid_argument", "size"),
        (b'{"unknown": 1}', JSON, 400, "invalid_argument", "unknown"),
        (b"\xff\xff\xff", PROTO, 400, "invalid_argument", "not a valid Thing"),
        (b"{}", {"content-type": "text/plain"}, 415, "invalid_argument", "text/plain"),
        (b"{}", {**JSON, "connect-protocol-version": "2"}, 400, "invalid_argument", "version"),
        (b"{}", {**JSON, "connect-timeout-ms": "soon"}, 400, "invalid_argument", "timeout"),
        (b"{}", {**JSON, "content-encoding": "br"}, 501, "unimplemented", "br"),
        (b"not gzip", {**JSON, "content-encoding": "gzip"}, 400, "invalid_argument", "gzip"),
    ],
)
def test_bad_input_gets_connect_errors(
    body: bytes, headers: dict[str, str], status: int, code: str, words: str
) -> None:
    reply = connect_post(ECHO, body, headers)
    assert reply.status_code == status, reply.text
    error = reply.json()
    assert error["code"] == code and words in error["message"]


def test_body_over_the_limit_is_resource_exhausted() -> None:
    reply = connect_post(ECHO, {"name": "x" * 5000}, max_body_bytes=1024)
    assert reply.status_code == 413
    assert reply.json()["code"] == "resource_exhausted"


def test_gzip_bomb_is_refused_by_the_inflated_size() -> None:
    bomb = gzip.compress(b'{"name": "' + b"x" * 200_000 + b'"}')
    reply = connect_post(ECHO, bomb, {**JSON, "content-encoding": "gzip"}, max_body_bytes=4096)
    assert reply.status_code == 413 and reply.json()["code"] == "resource_exhausted"


def test_gzip_both_ways() -> None:
    thing = {"name": "n", "displayName": "y" * 4000}
    headers = {**JSON, "content-encoding": "gzip", "accept-encoding": "gzip"}
    reply = connect_post(ECHO, gzip.compress(json.dumps(thing).encode()), headers)
    assert reply.status_code == 200
    assert reply.headers["content-encoding"] == "gzip"
    assert reply.json()["displayName"] == thing["displayName"]  # httpx inflated it
    # Connect keeps its own negotiation: gzip, though REST would answer this client in zstd.
    both = {**JSON, "accept-encoding": "zstd, gzip"}
    reply = connect_post(ECHO, json.dumps(thing).encode(), both)
    assert reply.headers["content-encoding"] == "gzip"
    refused = {**JSON, "accept-encoding": "br, gzip;q=0"}
    plain = connect_post(ECHO, json.dumps(thing).encode(), refused)
    assert "content-encoding" not in plain.headers
    assert plain.json()["displayName"] == thing["displayName"]


def test_get_for_a_method_without_side_effects() -> None:
    path = "/api/portico.test.v1.Shelf/GetThing"
    reply = connect_get(path, {"encoding": "json", "message": '{"name":"a","kind":"KIND_BOOK"}'})
    assert reply.status_code == 200 and reply.json()["name"] == "a"
    raw = pb.GetThingRequest(name="b").SerializeToString()
    encoded = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    binary = connect_get(path, {"encoding": "proto", "base64": "1", "message": encoded})
    assert pb.Thing.FromString(binary.content).name == "b"
    # The same on the canonical path: a GET there can only be Connect.
    canonical = connect_get(path.removeprefix("/api"), {"encoding": "json", "message": "{}"})
    assert canonical.status_code == 200


def test_get_of_a_method_with_side_effects_is_refused() -> None:
    reply = connect_get(ECHO, {"encoding": "json", "message": "{}"})
    assert reply.status_code == 405 and reply.headers["allow"] == "POST"
    assert reply.json()["code"] == "unimplemented"
    bad = connect_get("/api/portico.test.v1.Shelf/GetThing", {"encoding": "xml", "message": "{}"})
    assert bad.status_code == 400 and "encoding" in bad.json()["message"]


def test_a_get_without_connect_parameters_is_a_method_the_path_does_not_allow() -> None:
    """Connect's GET names its ``encoding`` and ``message``; a GET naming neither is not a
    Connect call, and the paths the OpenAPI document declares POST only answer it 405 + Allow."""
    for path in ("/api/portico.test.v1.Shelf/GetThing", "/portico.test.v1.Shelf/GetThing"):
        reply = connect_get(path, {})
        assert reply.status_code == 405, (path, reply.text)
        assert reply.headers["allow"] == "POST"


def test_timeout_and_metadata_reach_the_servicer_and_back() -> None:
    headers = {**JSON, "connect-timeout-ms": "5000", "grpc-metadata-x-thing": "v"}
    reply = connect_post("/api/portico.test.v1.Shelf/InspectContext", {}, headers)
    report = reply.json()
    assert report["hasDeadline"] is True and 0 < report["timeRemaining"] <= 5
    assert report["metadata"]["x-thing"] == "v"
    assert reply.headers["x-initial"] == "yes"
    assert reply.headers["trailer-x-trailing"] == "done"


def test_the_gate_refuses_in_connect_form() -> None:
    async def refuse(method: Any, metadata: Any, peer: Any) -> object:
        raise GatewayError(grpc.StatusCode.UNAUTHENTICATED, "missing bearer token")

    async def scenario() -> Any:
        async with serving(GatewayOptions(authenticate=refuse)) as served:
            return await served.http.post(ECHO, json={}, headers=JSON)

    reply = run(scenario())
    assert reply.status_code == 401
    assert reply.json() == {"code": "unauthenticated", "message": "missing bearer token"}


def test_unknown_rpc_under_the_prefix_is_not_connect() -> None:
    reply = connect_post("/api/portico.test.v1.Shelf/Nope", {})
    assert reply.status_code == 404


def test_prefix_is_configurable() -> None:
    reply = connect_post("/rpc/portico.test.v1.Shelf/EchoThing", {"name": "a"}, rpc_prefix="/rpc")
    assert reply.json()["name"] == "a"
    assert connect_post(ECHO, {"name": "a"}, rpc_prefix="/rpc").status_code == 404


# -- streams -------------------------------------------------------------------------------------

STREAM_JSON = {"content-type": "application/connect+json"}
STREAM_PROTO = {"content-type": "application/connect+proto"}


def stream(path: str, body: bytes, headers: dict[str, str], **options: Any) -> Any:
    reply = connect_post(f"/api/portico.test.v1.Shelf/{path}", body, headers, **options)
    return reply, frames(reply.content)


def test_server_stream_sends_envelopes_and_end_stream() -> None:
    request = frame(json.dumps({"parent": "shelves/1", "count": 3}).encode())
    reply, found = stream("ListThings", request, STREAM_JSON)
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/connect+json"
    *messages, (end_flags, end) = found
    names = [json.loads(m)["name"] for _, m in messages]
    assert names == [f"shelves/1/things/{i}" for i in range(3)]
    assert end_flags == 2 and json.loads(end) == {}


def test_server_stream_failure_is_in_end_stream() -> None:
    request = pb.ListThingsRequest(parent="shelves/1", count=5, fail=True, fail_after=2)
    reply, found = stream("ListThings", frame(request.SerializeToString()), STREAM_PROTO)
    assert reply.status_code == 200
    assert [pb.Thing.FromString(m).count for f, m in found[:-1]] == [0, 1]
    assert found[-1][0] == 2
    assert json.loads(found[-1][1])["error"] == {
        "code": "failed_precondition",
        "message": "stopped at 2",
    }


def test_client_stream_and_half_duplex_bidi() -> None:
    body = b"".join(frame(pb.Thing(name=n).SerializeToString()) for n in ("a", "b"))
    _, found = stream("CollectThings", body, STREAM_PROTO)
    assert pb.ThingSummary.FromString(found[0][1]).names == ["a", "b"]
    _, chat = stream("ChatThings", body, STREAM_PROTO)
    assert [pb.Thing.FromString(m).name for _, m in chat[:-1]] == ["A", "B"]


def test_compressed_envelopes_are_read() -> None:
    payload = gzip.compress(pb.Thing(name="z").SerializeToString())
    headers = {**STREAM_PROTO, "connect-content-encoding": "gzip"}
    _, found = stream("CollectThings", frame(payload, flags=1), headers)
    assert pb.ThingSummary.FromString(found[0][1]).names == ["z"]


def test_stream_replies_are_compressed_when_the_client_accepts_gzip() -> None:
    parent = "shelves/" + "p" * 2000  # each reply is over the size worth compressing
    request = frame(pb.ListThingsRequest(parent=parent, count=2).SerializeToString())
    headers = {**STREAM_PROTO, "connect-accept-encoding": "gzip"}
    reply, found = stream("ListThings", request, headers)
    assert reply.headers["connect-content-encoding"] == "gzip"
    *messages, (end_flags, end) = found
    assert [flags for flags, _ in messages] == [1, 1]
    names = [pb.Thing.FromString(gzip.decompress(m)).name for _, m in messages]
    assert names == [f"{parent}/things/{i}" for i in range(2)]
    assert end_flags == 2 and json.loads(end) == {}
    # Without the header (or with gzip refused) nothing is compressed.
    refused = {**STREAM_PROTO, "connect-accept-encoding": "gzip;q=0"}
    for plain_headers in (STREAM_PROTO, refused):
        plain, found = stream("ListThings", request, plain_headers)
        assert "connect-content-encoding" not in plain.headers
        assert [flags for flags, _ in found] == [0, 0, 2]


@pytest.mark.parametrize(
    ("body", "headers", "code", "words"),
    [
        (frame(b"{}")[:-1], STREAM_JSON, "invalid_argument", "ends inside an envelope"),
        (frame(b"x" * 2000), STREAM_JSON, "resource_exhausted", "limit"),
        (frame(b"{}", flags=1), STREAM_JSON, "invalid_argument", "compressed"),
        (frame(b"{}", flags=2), STREAM_JSON, "invalid_argument", "flags"),
        (frame(b"{bad"), STREAM_JSON, "invalid_argument", "not valid JSON"),
        (b"", STREAM_JSON, "invalid_argument", "no message"),
        (frame(b"{}") * 2, STREAM_JSON, "invalid_argument", "more than one"),
    ],
)
def test_bad_streams_end_with_an_error(
    body: bytes, headers: dict[str, str], code: str, words: str
) -> None:
    reply, found = stream("ListThings", body, headers, max_body_bytes=1024)
    assert reply.status_code == 200
    flags, end = found[-1]
    error = json.loads(end)["error"]
    assert flags == 2 and error["code"] == code and words in error["message"], error


def test_unknown_stream_codec_is_415() -> None:
    reply = connect_post(
        "/api/portico.test.v1.Shelf/ListThings", b"", {"content-type": "application/connect+xml"}
    )
    assert reply.status_code == 415 and reply.json()["code"] == "invalid_argument"


def test_stream_deadline_from_connect_timeout_ms() -> None:
    request = frame(pb.ListThingsRequest(parent="p", count=100, delay_ms=20).SerializeToString())
    headers = {**STREAM_PROTO, "connect-timeout-ms": "150"}
    _, found = stream("ListThings", request, headers)
    assert 0 < len(found) - 1 < 100
    assert json.loads(found[-1][1])["error"]["code"] == "deadline_exceeded"


def test_client_going_away_cancels_the_stream() -> None:
    servicer = ShelfServicer()

    async def check() -> None:
        options = GatewayOptions(authenticate=NO_AUTH)
        app = create_app(shelf_registry(), {SERVICE: servicer}, options)
        async with uvicorn_serving(app) as address, httpx.AsyncClient() as client:
            url = f"http://{address}/api/portico.test.v1.Shelf/ListThings"
            body = frame(pb.ListThingsRequest(count=1000, delay_ms=50).SerializeToString())
            async with client.stream("POST", url, content=body, headers=STREAM_PROTO) as response:
                first = await asyncio.wait_for(anext(response.aiter_bytes()), 2)
                assert frames(first)[0][0] == 0
            await asyncio.wait_for(servicer.stream_cancelled.wait(), 5)
            assert not servicer.stream_done

    run(check())
