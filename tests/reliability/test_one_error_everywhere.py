"""Item (issue 49, row 7 and Deliver 3): a refusal carries the same status, details and
request id on every server and protocol.

Under pyvoy a gRPC call the gate refused had no ``grpc-status-details-bin`` (the grpc.aio port
sends one; ``rpc_status.from_call`` returned None), gRPC-Web sent none either for a status
without details, and a method nobody serves was answered by the grpc.aio port without a
request id, and over Connect and gRPC-Web with REST's 404; a grpc client at times saw no request
id on a refused stream (its initial metadata, sent just before the status, is at times lost:
the trailers carry the id now). Here every kind of refusal is made
over native gRPC (the grpc.aio port under uvicorn, the HTTP port under pyvoy), Connect, gRPC-Web
and REST, on both servers, and each answer's code, message, details and request id compared.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import grpc
import httpx
import pytest
from google.protobuf import any_pb2, json_format
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from gen.cnct.kaas.api import api_pb2
from gen.edgeproto import flavor_pb2
from tests.harness import run
from tests.reliability.server import ROOT, Server, login, start_server

pytestmark = pytest.mark.slow  # a server of its own: scheduled first (tests/conftest.py)

CLUSTER = "/cnct.kaas.api.Cluster/"
LIMITED = "cnct.kaas.api.Cluster/GetClusterList"  # rate limited to one call, then refused
VIEWER_PASSWORD = "viewer-password"


@dataclass(frozen=True)
class Refusal:
    """One kind of refusal: whose call (a token's name or none), what it asks, what it gets."""

    token: str  # "", "admin", "viewer" or a token as it is sent
    method: str
    request: dict[str, str]  # the request message as JSON
    rest: tuple[str, str]  # REST's verb and path (with the query) for the same call
    code: grpc.StatusCode
    message: str  # a regular expression the whole message matches
    detail_types: tuple[str, ...]
    rest_message: str | None = None  # where REST's own refusal says otherwise
    service: str = CLUSTER
    stream: bool = False  # the method streams its replies


KINDS = {
    "no token": Refusal(
        "", "GetVersionInformation", {}, ("GET", "/api/v1/version"),
        grpc.StatusCode.UNAUTHENTICATED, "missing bearer token", (),
    ),
    "bad token": Refusal(
        "not-a-token", "GetVersionInformation", {}, ("GET", "/api/v1/version"),
        grpc.StatusCode.UNAUTHENTICATED, "token is malformed", (),
    ),
    "forbidden role": Refusal(
        "viewer", "CreateCluster", {"name": "c1"}, ("POST", "/api/v1/cluster"),
        grpc.StatusCode.PERMISSION_DENIED, "role 'viewer' may not call CreateCluster", (),
    ),
    "rate limited": Refusal(
        "admin", "GetClusterList", {}, ("GET", "/api/v1/cluster/list"),
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        r"rate limit of .+ exceeded; try again in \d+ s", ("google.rpc.RetryInfo",),
    ),
    "invalid argument": Refusal(
        "admin", "CreateCluster", {"name": "Bad Name!"}, ("POST", "/api/v1/cluster"),
        grpc.StatusCode.INVALID_ARGUMENT,
        r"name: 'Bad Name!' must consist of .+; k8s_version: is required; .+",
        ("google.rpc.BadRequest",),
    ),
    "not found": Refusal(
        "admin", "GetCluster", {"name": "nope"}, ("GET", "/api/v1/cluster?name=nope"),
        grpc.StatusCode.NOT_FOUND, "cluster 'nope' not found", (),
    ),
    "stream, no token": Refusal(
        "", "ShowFlavor", {}, ("POST", "/show/flavor"),
        grpc.StatusCode.UNAUTHENTICATED, "missing bearer token", (),
        service="/edgeproto.FlavorApi/", stream=True,
    ),
    "unimplemented": Refusal(
        "admin", "NoSuchMethod", {}, ("PUT", "/api/v1/version"),
        grpc.StatusCode.UNIMPLEMENTED, f"Method not found: {CLUSTER}NoSuchMethod", (),
        # REST has paths, not methods: its nearest refusal is a verb the path does not serve.
        rest_message="PUT is not allowed on /api/v1/version; allowed: GET",
    ),
}  # fmt: skip
PROTOCOLS = ("grpc", "connect", "grpc-web", "rest")
_INPUT = {
    "GetVersionInformation": api_pb2.GetVersionMsg,
    "CreateCluster": api_pb2.CreateClusterMsg,
    "GetClusterList": api_pb2.GetClusterListMsg,
    "GetCluster": api_pb2.GetClusterMsg,
    "NoSuchMethod": api_pb2.GetVersionMsg,
    "ShowFlavor": flavor_pb2.Flavor,
}


@dataclass(frozen=True)
class Answer:
    code: int
    message: str
    details: tuple[any_pb2.Any, ...] | None  # None: the answer carried no google.rpc.Status
    request_id: str | None


@dataclass
class Served:
    server: Server
    tokens: dict[str, str]


@pytest.fixture(scope="module", params=["uvicorn", "pyvoy"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """A server (on each HTTP server Portico offers) with an admin and a viewer, whose admin
    has used up the rate limit of LIMITED."""
    data = Path(tmp_path_factory.mktemp(f"errors-{request.param}")) / "data"
    server = start_server(
        data, env={"PORTICO_RATE_LIMIT_METHODS": f"{LIMITED}=0.001:1"}, server=str(request.param)
    )
    try:
        server.wait_ready()
        add = ("users", "add", "viewer", "--role", "viewer", "--password-stdin")
        added = subprocess.run(
            [sys.executable, "-m", "app", *add],
            input=f"{VIEWER_PASSWORD}\n",
            env={**os.environ, **server.env},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert added.returncode == 0, added.stderr
        viewer = httpx.post(
            f"{server.base_url}/v1/auth:login",
            json={"username": "viewer", "password": VIEWER_PASSWORD},
            timeout=10,
        )
        assert viewer.status_code == 200, viewer.text
        tokens = {"admin": login(server), "viewer": viewer.json()["token"]}
        headers = {"authorization": f"Bearer {tokens['admin']}"}
        for _ in range(5):  # the limit's one call, then its refusals
            limited = httpx.get(f"{server.base_url}/api/v1/cluster/list", headers=headers)
            if limited.status_code == 429:
                break
        assert limited.status_code == 429, limited.text
        yield Served(server, tokens)
    finally:
        server.stop()


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_refusal_is_the_same_on_every_server_and_protocol(
    served: Served, kind: str, protocol: str
) -> None:
    refusal = KINDS[kind]
    request_id = f"{kind.replace(' ', '-')}-{protocol}"
    answer = run(_call(served, refusal, protocol, request_id))
    assert answer.code == refusal.code.value[0], answer
    expected = refusal.rest_message if protocol == "rest" and refusal.rest_message else None
    assert re.fullmatch(expected or refusal.message, answer.message), answer.message
    assert answer.details is not None, "no google.rpc.Status with the answer"
    assert tuple(_type(d) for d in answer.details) == refusal.detail_types
    assert answer.request_id == request_id
    if kind == "rate limited":  # its delay shrinks from one call to the next
        retry = error_details_pb2.RetryInfo()
        assert answer.details[0].Unpack(retry)
        assert 0 < retry.retry_delay.ToTimedelta().total_seconds() <= 1000
    elif refusal.detail_types:
        reference = run(_call(served, refusal, "rest", request_id))
        assert answer.details == reference.details


def test_an_answer_without_a_given_request_id_has_one_of_its_own(served: Served) -> None:
    for protocol in PROTOCOLS:
        answer = run(_call(served, KINDS["unimplemented"], protocol, None))
        assert answer.request_id, protocol


async def _call(served: Served, refusal: Refusal, protocol: str, request_id: str | None) -> Answer:
    server = served.server
    token = served.tokens.get(refusal.token, refusal.token)
    headers = {"x-request-id": request_id} if request_id else {}
    if token:
        headers["authorization"] = f"Bearer {token}"
    message = json_format.ParseDict(refusal.request, _INPUT[refusal.method]())
    path = refusal.service + refusal.method
    async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as http:
        if protocol == "grpc":
            data = message.SerializeToString()
            return await _native(server.grpc_port, path, data, headers, refusal.stream)
        if protocol == "connect" and refusal.stream:
            frame = json.dumps(refusal.request).encode()
            body = b"\x00" + len(frame).to_bytes(4, "big") + frame
            stream = {**headers, "content-type": "application/connect+json"}
            return _connect_stream(await http.post(path, content=body, headers=stream))
        if protocol == "connect":
            reply = await http.post(
                path, json=refusal.request, headers={**headers, "connect-protocol-version": "1"}
            )
            return _connect(reply.json(), reply)
        if protocol == "grpc-web":
            body = b"\x00" + message.ByteSize().to_bytes(4, "big") + message.SerializeToString()
            web = {**headers, "content-type": "application/grpc-web+proto", "x-grpc-web": "1"}
            return _grpc_web(await http.post(path, content=body, headers=web))
        verb, rest_path = refusal.rest
        body_json = refusal.request if verb in ("POST", "PUT") else None
        return _rest(await http.request(verb, rest_path, json=body_json, headers=headers))


async def _native(
    port: int, path: str, body: bytes, headers: dict[str, str], stream: bool
) -> Answer:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        kind = channel.unary_stream if stream else channel.unary_unary
        call = kind(path, request_serializer=None, response_deserializer=None)(
            body, metadata=tuple(headers.items()), timeout=10
        )
        try:
            if isinstance(call, grpc.aio.UnaryStreamCall):
                async for _ in call:
                    pass
            else:
                await call
        except grpc.aio.AioRpcError as error:
            status = rpc_status.from_call(error)
            # From the trailers, which a grpc client always surfaces with the status: a stream's
            # initial metadata, sent just before them, it at times loses (grpcio, both servers).
            request_id = dict(error.trailing_metadata() or ()).get("x-request-id")
            return Answer(
                error.code().value[0],
                error.details() or "",
                None if status is None else tuple(status.details),
                None if request_id is None else str(request_id),
            )
        raise AssertionError("the call was answered OK")


def _connect_stream(reply: httpx.Response) -> Answer:
    """A Connect stream's answer: its end-stream frame's error."""
    assert reply.status_code == 200, reply.text
    [end] = [payload for flags, payload in _frames(reply.content) if flags & 0x02]
    return _connect(json.loads(end)["error"], reply)


def _connect(error: dict[str, Any], reply: httpx.Response) -> Answer:
    name = error["code"]
    code = grpc.StatusCode.CANCELLED if name == "canceled" else grpc.StatusCode[name.upper()]
    details = tuple(
        any_pb2.Any(
            type_url=f"type.googleapis.com/{d['type']}",
            value=base64.b64decode(d["value"] + "=" * (-len(d["value"]) % 4)),
        )
        for d in error.get("details", ())
    )
    return Answer(
        code.value[0], error.get("message", ""), details, reply.headers.get("x-request-id")
    )


def _grpc_web(reply: httpx.Response) -> Answer:
    assert reply.status_code == 200, reply.text
    trailers = {}
    for flags, frame in _frames(reply.content):
        if flags & 0x80:
            for line in frame.decode().split("\r\n"):
                if line:
                    key, _, value = line.partition(":")
                    trailers[key.strip().lower()] = value.strip()
    raw = trailers.get("grpc-status-details-bin")
    status = (
        None
        if raw is None
        else status_pb2.Status.FromString(base64.b64decode(raw + "=" * (-len(raw) % 4)))
    )
    return Answer(
        int(trailers["grpc-status"]),
        unquote(trailers.get("grpc-message", "")),
        None if status is None else tuple(status.details),
        reply.headers.get("x-request-id"),
    )


def _frames(body: bytes) -> Iterator[tuple[int, bytes]]:
    """A body's envelopes: (flags, payload)."""
    while body:
        flags, length = body[0], int.from_bytes(body[1:5], "big")
        yield flags, body[5 : 5 + length]
        body = body[5 + length :]


def _rest(reply: httpx.Response) -> Answer:
    status = json_format.ParseDict(reply.json(), status_pb2.Status())
    return Answer(
        status.code, status.message, tuple(status.details), reply.headers.get("x-request-id")
    )


def _type(detail: any_pb2.Any) -> str:
    return detail.type_url.rsplit("/", 1)[-1]
