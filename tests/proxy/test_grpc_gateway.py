"""The grpc-gateway that the benchmark's proxy case sets beside ``portico proxy``
(tests/bench/grpc_gateway.py) answers the Echo API's REST route from the grpc-go upstream: (p3)
measures a working gateway, not a stream of errors."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.bench import grpc_gateway
from tests.conftest import require
from tests.proxy.processes import Process, free_port, go_echo_binary, start_go_echo


def _gateway() -> Path:
    try:
        return grpc_gateway.binary()
    except grpc_gateway.Unavailable as error:
        require("grpc-gateway", str(error))
        raise


def test_grpc_gateway_answers_say_from_the_go_upstream() -> None:
    echo_binary, gateway = go_echo_binary(), _gateway()
    upstream_port, port = free_port(), free_port()
    upstream = start_go_echo(echo_binary, upstream_port)
    try:
        process = Process(
            [str(gateway), "-upstream", f"127.0.0.1:{upstream_port}", "-port", str(port)]
        )
        try:
            process.wait_for("listening")
            reply = httpx.get(f"http://127.0.0.1:{port}/v1/say/hello", timeout=10)
        finally:
            process.stop()
    finally:
        upstream.stop()
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert (body["text"], body["server"]) == ("hello", "go")
    # What only grpc-gateway sends upstream: the HTTP client's headers, under its own prefix.
    assert body["metadata"]["grpcgateway-user-agent"].startswith("python-httpx/")
