"""gRPC-Web over the shelf API: binary, text and JSON, unary and server streams, trailers."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import unquote

import pytest
from google.rpc import status_pb2

from app.gateway.admission import NO_AUTH
from app.gateway.routes import GatewayOptions

from .conftest import run, serving
from .shelf import pb
from .wire import frame, frames

WEB = {"content-type": "application/grpc-web+proto", "x-grpc-web": "1"}
TEXT = {"content-type": "application/grpc-web-text", "x-grpc-web": "1"}


def post(method: str, body: bytes, headers: dict[str, str], **options: Any) -> Any:
    async def scenario() -> Any:
        async with serving(GatewayOptions(authenticate=NO_AUTH, **options)) as served:
            path = f"/portico.test.v1.Shelf/{method}"
            return await served.http.post(path, content=body, headers=headers)

    return run(scenario())


def trailers(payload: bytes) -> dict[str, str]:
    lines = payload.decode().split("\r\n")
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines if line)}


def test_unary_binary_answers_message_then_trailers() -> None:
    thing = pb.Thing(name="n", size=5)
    reply = post("EchoThing", frame(thing.SerializeToString()), WEB)
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/grpc-web+proto"
    (flags, message), (trailer_flags, end) = frames(reply.content)
    assert flags == 0 and pb.Thing.FromString(message) == thing
    assert trailer_flags == 0x80 and trailers(end)["grpc-status"] == "0"


def test_text_mode_is_one_base64_stream_both_ways() -> None:
    body = base64.b64encode(frame(pb.ListThingsRequest(parent="p", count=4).SerializeToString()))
    reply = post("ListThings", body, TEXT)
    assert reply.headers["content-type"] == "application/grpc-web-text"
    found = frames(base64.b64decode(reply.content, validate=True))
    assert [pb.Thing.FromString(m).count for f, m in found[:-1]] == [0, 1, 2, 3]
    assert trailers(found[-1][1])["grpc-status"] == "0"


def test_json_subtype_uses_json_names() -> None:
    headers = {"content-type": "application/grpc-web+json"}
    reply = post("EchoThing", frame(b'{"display_name": "d"}'), headers)
    (_, message), _ = frames(reply.content)
    assert json.loads(message)["displayName"] == "d"


def test_server_stream_failure_and_rich_details_are_in_the_trailers() -> None:
    request = pb.ListThingsRequest(parent="p", count=5, fail=True, fail_after=1)
    found = frames(post("ListThings", frame(request.SerializeToString()), WEB).content)
    assert len(found) == 2
    assert trailers(found[-1][1])["grpc-status"] == "9"
    assert unquote(trailers(found[-1][1])["grpc-message"]) == "stopped at 1"
    rich = pb.FailRequest(code=3, message="bad name", rich=True).SerializeToString()
    (end,) = frames(post("Fail", frame(rich), WEB).content)
    fields = trailers(end[1])
    status = status_pb2.Status.FromString(base64.b64decode(fields["grpc-status-details-bin"]))
    assert status.code == 3 and status.message == "bad name" and len(status.details) == 1


def test_client_stream_is_served_too() -> None:
    body = frame(pb.Thing(name="a").SerializeToString()) * 2
    (message, _) = frames(post("CollectThings", body, WEB).content)
    assert pb.ThingSummary.FromString(message[1]).count == 2


@pytest.mark.parametrize(
    ("body", "headers", "status", "words"),
    [
        (b"\x00\x00\x00", WEB, "3", "ends inside an envelope"),
        (frame(b"\xff\xff"), WEB, "3", "not a valid Thing"),
        (frame(b"x" * 2000), WEB, "8", "limit"),
        (b"!!!!", TEXT, "3", "not base64"),
        (frame(b""), {"content-type": "application/grpc-web+thrift"}, "3", "not supported"),
        (frame(b"", flags=1), WEB, "3", "compressed"),
        (frame(b""), {**WEB, "grpc-encoding": "snappy"}, "12", "snappy"),
        (frame(b""), {**WEB, "grpc-timeout": "soon"}, "3", "grpc-timeout"),
    ],
)
def test_bad_input_gets_trailers_never_a_500(
    body: bytes, headers: dict[str, str], status: str, words: str
) -> None:
    reply = post("EchoThing", body, headers, max_body_bytes=1024)
    assert reply.status_code == 200
    content = reply.content
    if headers["content-type"].endswith("-text"):
        content = base64.b64decode(content)
    flags, end = frames(content)[-1]
    fields = trailers(end)
    assert flags == 0x80 and fields["grpc-status"] == status, fields
    assert words in unquote(fields["grpc-message"])


def test_cors_preflight_and_exposed_headers() -> None:
    async def scenario() -> Any:
        options = GatewayOptions(authenticate=NO_AUTH, cors_origins=("https://dash.example",))
        async with serving(options) as served:
            preflight = await served.http.options(
                "/api/portico.test.v1.Shelf/EchoThing",
                headers={
                    "origin": "https://dash.example",
                    "access-control-request-method": "POST",
                    "access-control-request-headers": "content-type,x-grpc-web,grpc-timeout",
                },
            )
            call = await served.http.post(
                "/api/portico.test.v1.Shelf/EchoThing",
                content=frame(b""),
                headers={**WEB, "origin": "https://dash.example"},
            )
            return preflight, call

    preflight, call = run(scenario())
    assert preflight.status_code == 200
    assert "x-grpc-web" in preflight.headers["access-control-allow-headers"].lower()
    exposed = call.headers["access-control-expose-headers"].lower()
    assert {"grpc-status", "grpc-message", "grpc-status-details-bin"} <= set(exposed.split(", "))
