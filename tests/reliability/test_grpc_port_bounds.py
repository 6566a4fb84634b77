"""Item (issue 49, row 4): native gRPC is bounded as HTTP is, on the grpc.aio port (uvicorn) as
on the one port (pyvoy).

A unary call whose message never came was never answered on the grpc.aio port (grpc.aio calls
a unary handler only once its message has arrived), with or without a token, and a body that
ended without a message hung the same way; its connections took any number of such streams
(~42k hung streams held ~820 MB). A server-streaming call's message was never waited for within
the body timeout on either server. Now every call of one request message gets it within
``PORTICO_BODY_TIMEOUT_SECONDS`` or ends DEADLINE_EXCEEDED, a connection opens at most
``limits.MAX_CONCURRENT_STREAMS`` streams at once, and a connection that never speaks HTTP/2, or
stays idle, is closed after the header timeout, on both servers.
"""

from __future__ import annotations

import socket
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.gateway.http_io import MORE_THAN_ONE, NO_MESSAGE
from app.settings import limits
from tests.reliability.h2_calls import EMPTY_MESSAGE, Connection
from tests.reliability.server import Server, login, start_server

pytestmark = pytest.mark.slow  # a server of its own: scheduled first (tests/conftest.py)

BODY_SECONDS = 1.0
HEADER_SECONDS = 4.0
SWEEP = 1.0  # how late a body timeout may fire (app/gateway/http/slow_reads.py)
UNARY = "/cnct.kaas.api.Cluster/GetVersionInformation"
SERVER_STREAM = "/edgeproto.FlavorApi/ShowFlavor"
DEADLINE_EXCEEDED, INVALID_ARGUMENT, UNAUTHENTICATED = 4, 3, 16
REFUSED_STREAM = 0x7  # HTTP/2's error code


@pytest.fixture(scope="module", params=["uvicorn", "pyvoy"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, str]]:
    """A server (on each HTTP server Portico offers) with short body and header timeouts, and
    a token; gRPC is on the grpc.aio port under uvicorn and on the HTTP port under pyvoy."""
    env = {
        "PORTICO_BODY_TIMEOUT_SECONDS": str(BODY_SECONDS),
        "PORTICO_HEADER_TIMEOUT_SECONDS": str(HEADER_SECONDS),
    }
    data = Path(tmp_path_factory.mktemp(f"bounds-{request.param}")) / "data"
    server = start_server(data, env=env, server=str(request.param))
    try:
        server.wait_ready()
        yield server, login(server)
    finally:
        server.stop()


def _auth(token: str, request_id: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"), ("x-request-id", request_id))


@pytest.mark.parametrize("path", [UNARY, SERVER_STREAM])
def test_a_call_whose_message_never_comes_ends_at_the_body_timeout(
    served: tuple[Server, str], path: str
) -> None:
    server, token = served
    with Connection(server.grpc_port) as connection:
        began = time.monotonic()
        anonymous = connection.call(path, body=None, end=False)
        signed_in = connection.call(path, _auth(token, "never-comes"), body=None, end=False)
        [refused] = connection.wait([anonymous], BODY_SECONDS)
        # Who calls is settled first: an anonymous caller is refused at once.
        assert refused.code == UNAUTHENTICATED, refused
        [answer] = connection.wait([signed_in], BODY_SECONDS + SWEEP + 3)
        took = time.monotonic() - began
    assert answer.code == DEADLINE_EXCEEDED, answer
    assert answer.message == f"request body not received within {BODY_SECONDS:g} seconds"
    assert answer.request_id == "never-comes"
    assert BODY_SECONDS <= took < BODY_SECONDS + SWEEP + 3


@pytest.mark.parametrize("path", [UNARY, SERVER_STREAM])
def test_a_request_of_no_message_or_two_is_invalid_argument_at_once(
    served: tuple[Server, str], path: str
) -> None:
    server, token = served
    with Connection(server.grpc_port) as connection:
        none = connection.call(path, _auth(token, "none"), body=None)
        two = connection.call(path, _auth(token, "two"), body=EMPTY_MESSAGE * 2)
        answers = connection.wait([none, two], BODY_SECONDS)
    assert [(a.code, a.message) for a in answers] == [
        (INVALID_ARGUMENT, NO_MESSAGE),
        (INVALID_ARGUMENT, MORE_THAN_ONE),
    ]


def test_streams_past_the_limit_of_one_connection_are_refused(
    served: tuple[Server, str],
) -> None:
    """Every stream past the limit is refused; the rest end at the body timeout; the next
    client is served."""
    server, token = served
    extra = 16
    with Connection(server.grpc_port) as connection:
        connection.settle()
        connection.ignore_stream_limit()
        streams = [
            connection.call(UNARY, _auth(token, f"hung-{i}"), body=None, end=False, send=False)
            for i in range(limits.MAX_CONCURRENT_STREAMS + extra)
        ]
        connection.flush()
        answers = connection.wait(streams, BODY_SECONDS + SWEEP + 20, until_closed=True)
    # Refused unanswered (REFUSED_STREAM). Envoy at times ends such a connection instead (a
    # GOAWAY, then the close, no stream answered): that bounds it too.
    refused = [answer.reset for answer in answers if not answer.ended]
    codes = Counter(answer.code for answer in answers if answer.ended)
    assert set(refused) <= {REFUSED_STREAM, None}, Counter(refused)
    assert len(refused) >= extra - 1, (Counter(refused), codes)  # one may be counted late
    assert set(codes) <= {DEADLINE_EXCEEDED}, codes
    assert codes[DEADLINE_EXCEEDED] == len(streams) - len(refused), codes
    with Connection(server.grpc_port) as connection:
        [answer] = connection.wait([connection.call(UNARY, _auth(token, "after"))], 5)
    assert answer.code == 0, answer


def test_connections_silent_or_idle_are_closed_after_the_header_timeout(
    served: tuple[Server, str],
) -> None:
    server, _ = served
    with socket.create_connection(("127.0.0.1", server.grpc_port)) as silent:
        silent.settimeout(HEADER_SECONDS + SWEEP + 5)  # recv raises TimeoutError past it
        began = time.monotonic()
        while silent.recv(1 << 16):  # whatever comes before the close (a GOAWAY)
            pass
        assert time.monotonic() - began >= HEADER_SECONDS - SWEEP
    with Connection(server.grpc_port) as idle:  # its preface and settings, then nothing
        took = idle.wait_goaway(HEADER_SECONDS + SWEEP + 5)
    assert took >= HEADER_SECONDS - SWEEP
