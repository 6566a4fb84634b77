"""Item (issue 49, row 9): a gRPC header value that is over or does not parse gets one answer
on the grpc.aio port (uvicorn) and on the one port (pyvoy).

grpc core parses ``grpc-timeout``, ``grpc-encoding`` and ``-bin`` values before Python sees the
call, so on the grpc.aio port its answers are fixed: DEADLINE_EXCEEDED for a zero timeout,
INTERNAL "Error parsing '<name>' metadata" for a value it cannot read, whoever calls. The one
port answered a zero timeout after the gate (UNAUTHENTICATED, or OK), a malformed timeout
INVALID_ARGUMENT, and took ``!!!`` as a ``-bin`` value. It answers as grpc core does now. Where
gRPC's own documents say otherwise, the one port follows them and docs/how-to/one-port.md says
so: an unsupported ``grpc-encoding`` is UNIMPLEMENTED (in every RPC protocol: gRPC-Web said
INVALID_ARGUMENT), and a timeout of more than 8 digits is malformed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.reliability.h2_calls import Answer, Connection
from tests.reliability.server import Server, login, start_server

pytestmark = pytest.mark.slow  # a server of its own: scheduled first (tests/conftest.py)

UNARY = "/cnct.kaas.api.Cluster/GetVersionInformation"
SERVER_STREAM = "/edgeproto.FlavorApi/ShowFlavor"
OK, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAUTHENTICATED = 0, 4, 12, 13, 16
TIMEOUT_NOT_PARSED = "Error parsing 'grpc-timeout' metadata"
BIN_NOT_PARSED = "Error parsing 'x-thing-bin' metadata: illegal base64 encoding"

# header, value: the code and message on both servers, whoever calls.
SAME = {
    ("grpc-timeout", "0n"): (DEADLINE_EXCEEDED, "deadline exceeded"),
    ("grpc-timeout", "0S"): (DEADLINE_EXCEEDED, "deadline exceeded"),
    ("grpc-timeout", "soon"): (INTERNAL, TIMEOUT_NOT_PARSED),
    ("grpc-timeout", "1x"): (INTERNAL, TIMEOUT_NOT_PARSED),
    ("grpc-timeout", "-1S"): (INTERNAL, TIMEOUT_NOT_PARSED),
    ("grpc-timeout", ""): (INTERNAL, TIMEOUT_NOT_PARSED),
    ("x-thing-bin", "!!!"): (INTERNAL, BIN_NOT_PARSED),
    ("x-thing-bin", "a"): (INTERNAL, BIN_NOT_PARSED),
    ("x-thing-bin", "YQ YQ"): (INTERNAL, BIN_NOT_PARSED),
    ("x-thing-bin", "-_-_"): (INTERNAL, BIN_NOT_PARSED),  # base64url is not gRPC's alphabet
}
# What differs, as the docs say: (grpc.aio port, one port).
DIFFERENT = {
    ("grpc-encoding", "snappy"): (
        (INTERNAL, "Error parsing 'grpc-encoding' metadata"),
        (UNIMPLEMENTED, "grpc-encoding 'snappy' is not supported; use gzip or identity"),
    ),
    ("grpc-encoding", ""): (
        (INTERNAL, "Error parsing 'grpc-encoding' metadata"),
        (UNIMPLEMENTED, "grpc-encoding '' is not supported; use gzip or identity"),
    ),
    ("grpc-timeout", "123456789S"): ((None, ""), (INTERNAL, TIMEOUT_NOT_PARSED)),
}


@pytest.fixture(scope="module", params=["uvicorn", "pyvoy"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, str]]:
    """A server (on each HTTP server Portico offers) and a token; gRPC is on the grpc.aio port
    under uvicorn and on the HTTP port under pyvoy."""
    data = Path(tmp_path_factory.mktemp(f"headers-{request.param}")) / "data"
    server = start_server(data, server=str(request.param))
    try:
        server.wait_ready()
        yield server, login(server)
    finally:
        server.stop()


def _answers(server: Server, token: str, header: str, value: str) -> dict[str, Answer]:
    """The answers of a unary and a server-streaming call, each anonymous and signed in, with
    ``header: value`` (all on one connection)."""
    calls = {}
    with Connection(server.grpc_port) as connection:
        for path in (UNARY, SERVER_STREAM):
            for who, auth in (
                ("anonymous", ()),
                ("signed in", (("authorization", f"Bearer {token}"),)),
            ):
                metadata = (*auth, ("x-request-id", "rid"), (header, value))
                calls[f"{who} {path}"] = connection.call(path, metadata)
        answers = connection.wait(list(calls.values()), 10)
    return dict(zip(calls, answers, strict=True))


@pytest.mark.parametrize(("header", "value"), SAME)
def test_a_header_value_gets_grpc_cores_answer_on_both_ports(
    served: tuple[Server, str], header: str, value: str
) -> None:
    server, token = served
    code, message = SAME[header, value]
    for call, answer in _answers(server, token, header, value).items():
        assert (answer.code, answer.message.lower()) == (code, message.lower()), call
        if server.grpc_port == server.http_port:  # the one port's own answer: with its id
            assert answer.request_id == "rid", call
            assert answer.status is not None and answer.status.code == code, call


@pytest.mark.parametrize(("header", "value"), DIFFERENT)
def test_where_the_one_port_follows_grpcs_documents_instead(
    served: tuple[Server, str], header: str, value: str
) -> None:
    server, token = served
    one_port = server.grpc_port == server.http_port
    code, message = DIFFERENT[header, value][one_port]
    for call, answer in _answers(server, token, header, value).items():
        if code is None:  # grpc core takes it: the call goes on to the gate
            assert answer.code == (OK if "signed in" in call else UNAUTHENTICATED), (call, answer)
        else:
            assert (answer.code, answer.message) == (code, message), call


@pytest.mark.parametrize(
    ("protocol", "headers"),
    [
        ("grpc-web", {"content-type": "application/grpc-web+proto", "grpc-encoding": "snappy"}),
        ("connect", {"content-type": "application/proto", "content-encoding": "snappy"}),
        (
            "connect stream",
            {"content-type": "application/connect+proto", "connect-content-encoding": "snappy"},
        ),
    ],
)
def test_an_unsupported_message_encoding_is_unimplemented_in_every_rpc_protocol(
    served: tuple[Server, str], protocol: str, headers: dict[str, str]
) -> None:
    server, token = served
    path = SERVER_STREAM if protocol == "connect stream" else UNARY
    body = b"\x00\x00\x00\x00\x00" if protocol != "connect" else b""
    auth = {"authorization": f"Bearer {token}", "x-request-id": "rid"}
    reply = httpx.post(
        f"{server.base_url}{path}", content=body, headers={**auth, **headers}, timeout=10
    )
    assert reply.headers["x-request-id"] == "rid"
    if protocol == "grpc-web":
        assert reply.status_code == 200, reply.text
        flags, end = _last_frame(reply.content)
        assert flags == 0x80
        assert f"grpc-status: {UNIMPLEMENTED}" in end.decode(), end
        assert "grpc-message: grpc-encoding 'snappy' is not supported" in end.decode(), end
        return
    # Connect: its error JSON, as the body (refused before a stream began too) or in a
    # stream's end frame.
    if reply.status_code == 200:
        flags, end = _last_frame(reply.content)
        assert flags & 0x02, reply.content
        error = json.loads(end)["error"]
    else:
        assert reply.status_code == 501, reply.text
        error = reply.json()
    assert error["code"] == "unimplemented", error
    assert "'snappy' is not supported; use gzip or identity" in error["message"], error


def _last_frame(body: bytes) -> tuple[int, bytes]:
    """A body's last envelope: (flags, payload)."""
    last = (0, b"")
    while body:
        length = int.from_bytes(body[1:5], "big")
        last, body = (body[0], body[5 : 5 + length]), body[5 + length :]
    return last
