"""Issue 49, row 2: the client's address is the socket's unless the peer is one of
``PORTICO_TRUSTED_PROXIES``, on both servers and both transports. Under pyvoy, Envoy once took
the last ``X-Forwarded-For`` hop for the client's address, so bad logins with a different one
each were never throttled and the audit lines named the forged addresses."""

from __future__ import annotations

import re
from pathlib import Path

import grpc
import httpx
import pytest

from gen.services.auth import auth_pb2, auth_pb2_grpc
from tests.harness import ADMIN_PASSWORD
from tests.reliability.server import Server, start_server

pytestmark = pytest.mark.slow  # servers as processes: scheduled first (tests/conftest.py)

WRONG = {"username": "admin", "password": "wrong-password"}
RIGHT = {"username": "admin", "password": ADMIN_PASSWORD}
AUDITED = re.compile(r"login failed \(wrong password\): user=admin address=(\S+)")


def _logins(server: Server, forwarded_for: list[str], body: dict[str, str]) -> list[int]:
    """The statuses of REST logins, one per ``X-Forwarded-For`` value."""
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        return [
            http.post("/v1/auth:login", json=body, headers={"x-forwarded-for": hop}).status_code
            for hop in forwarded_for
        ]


def _grpc_login(server: Server, forwarded_for: str) -> grpc.StatusCode:
    """A right-password login over native gRPC (pyvoy's one port, uvicorn's grpc.aio port)."""
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        stub = auth_pb2_grpc.AuthServiceStub(channel)
        try:
            stub.Login(
                auth_pb2.LoginRequest(**RIGHT),
                metadata=(("x-forwarded-for", forwarded_for),),
                timeout=10,
            )
        except grpc.RpcError as error:
            return error.code()
    return grpc.StatusCode.OK


def test_a_forged_forwarded_address_is_not_believed(tmp_path: Path, http_server: str) -> None:
    server = start_server(tmp_path / "data", server=http_server)
    try:
        server.wait_ready()
        forged = [f"198.51.100.{i}" for i in range(1, 8)]
        # The address is loopback's each time: locked out from the 6th, as from one client.
        assert _logins(server, forged, WRONG) == [401] * 5 + [429] * 2
        assert _grpc_login(server, "198.51.100.99") == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert set(AUDITED.findall(server.log())) == {"127.0.0.1"}
    finally:
        assert server.stop() == 0


def test_a_trusted_proxys_forwarded_address_is_believed(tmp_path: Path, http_server: str) -> None:
    env = {"PORTICO_TRUSTED_PROXIES": "127.0.0.1/32"}
    server = start_server(tmp_path / "data", server=http_server, env=env)
    try:
        server.wait_ready()
        # One client behind the proxy locks itself out; another behind it still signs in.
        assert _logins(server, ["198.51.100.7"] * 6, WRONG) == [401] * 5 + [429]
        assert _logins(server, ["198.51.100.8"], RIGHT) == [200]
        assert _grpc_login(server, "198.51.100.7") == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _grpc_login(server, "198.51.100.9") == grpc.StatusCode.OK
        assert set(AUDITED.findall(server.log())) == {"198.51.100.7"}
    finally:
        assert server.stop() == 0
