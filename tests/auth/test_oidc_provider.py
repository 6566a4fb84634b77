"""A real OpenID provider (npm's OpenID Certified ``oidc-provider``, started by the test on
loopback) issues access tokens by client credentials; ``portico serve``, on each HTTP server,
admits them over REST, Connect, gRPC-Web and native gRPC, with the role their claim grants."""

from __future__ import annotations

import json
import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import grpc
import httpx
import pytest

from app.gateway.registry import Registry
from tests.gateway.wire import frame, frames
from tests.protocols.node_clients import NODE_DIR, prepared_node
from tests.reliability.server import Server, start_server

AUDIENCE = "portico-api"
START_SECONDS = 30.0
CALL_SECONDS = 10.0
REGISTRY = Registry.from_package("gen")
VERSION = REGISTRY.method("/cnct.kaas.api.Cluster/GetVersionInformation")  # any role
CREATE = REGISTRY.method("/cnct.kaas.api.Cluster/CreateCluster")  # an operator's


class OpenIdProvider:
    """tests/protocols/node/oidc_provider.mjs running: its issuer and its clients."""

    def __init__(self, process: subprocess.Popen[str], started: dict[str, Any]) -> None:
        self.process = process
        self.issuer: str = started["issuer"]
        self.resource: str = started["resource"]
        self.clients: dict[str, dict[str, str]] = started["clients"]

    def token(self, algorithm: str) -> str:
        """An access token of the client whose tokens are signed with ``algorithm``."""
        client_id, client = next((k, c) for k, c in self.clients.items() if c["alg"] == algorithm)
        reply = httpx.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "resource": self.resource, "scope": "api"},
            auth=(client_id, client["secret"]),
            timeout=CALL_SECONDS,
        )
        assert reply.status_code == 200, reply.text
        return str(reply.json()["access_token"])


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The provider's first line of output (it says where it listens), within ``timeout``."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    line = process.stdout.readline() if ready else ""
    if not line:
        process.kill()
        _, errors = process.communicate(timeout=CALL_SECONDS)
        raise AssertionError(f"oidc-provider did not start within {timeout} s:\n{errors}")
    return line


@pytest.fixture(scope="module")
def openid_provider() -> Iterator[OpenIdProvider]:
    node = prepared_node()
    with subprocess.Popen(
        [node, "oidc_provider.mjs", AUDIENCE],
        cwd=NODE_DIR,
        stdin=subprocess.PIPE,  # closed at the end: the provider stops
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            yield OpenIdProvider(process, json.loads(_first_line(process, START_SECONDS)))
        finally:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(timeout=CALL_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture(scope="module", params=["uvicorn", "pyvoy"])
def portico(
    request: pytest.FixtureRequest,
    openid_provider: OpenIdProvider,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Server]:
    """``portico serve`` on each HTTP server, admitting the provider's tokens."""
    env = {"PORTICO_OIDC_ISSUER": openid_provider.issuer, "PORTICO_OIDC_AUDIENCE": AUDIENCE}
    data_dir = Path(tmp_path_factory.mktemp(str(request.param))) / "data"
    server = start_server(data_dir, env=env, server=str(request.param))
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def _rest(server: Server, token: str, method: Any) -> str:
    headers = {"authorization": f"Bearer {token}"}
    if method is VERSION:
        reply = httpx.get(f"{server.base_url}/api/v1/version", headers=headers)
    else:
        reply = httpx.post(f"{server.base_url}/api/v1/cluster", json={}, headers=headers)
    return "ok" if reply.status_code == 200 else f"{reply.status_code} {reply.json()['message']}"


def _connect(server: Server, token: str, method: Any) -> str:
    reply = httpx.post(
        f"{server.base_url}/api{method.grpc_path}",
        content=b"{}",
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
    )
    return "ok" if reply.status_code == 200 else f"{reply.status_code} {reply.json()['message']}"


def _grpc_web(server: Server, token: str, method: Any) -> str:
    reply = httpx.post(
        f"{server.base_url}/api{method.grpc_path}",
        content=frame(b""),
        headers={"content-type": "application/grpc-web+proto", "authorization": f"Bearer {token}"},
    )
    status = reply.headers.get("grpc-status")  # a refusal at the gate: trailers-only
    message = reply.headers.get("grpc-message", "")
    if status is None:
        trailer = frames(reply.content)[-1]
        assert trailer[0] == 0x80, reply.content
        fields = dict(
            line.split(":", 1) for line in trailer[1].decode().strip().split("\r\n") if line
        )
        status, message = fields["grpc-status"].strip(), fields.get("grpc-message", "").strip()
    names = {"0": "ok", "7": "PERMISSION_DENIED", "16": "UNAUTHENTICATED"}
    return names.get(status, status) + (f" {unquote(message)}" if status != "0" else "")


def _grpc(server: Server, token: str, method: Any) -> str:
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        call = channel.unary_unary(
            method.grpc_path,
            request_serializer=method.input_type.SerializeToString,
            response_deserializer=method.output_type.FromString,
        )
        try:
            call(
                method.input_type(),
                metadata=(("authorization", f"Bearer {token}"),),
                timeout=CALL_SECONDS,
            )
        except grpc.RpcError as error:
            return f"{error.code().name} {error.details()}"
    return "ok"


PROTOCOLS = {"rest": _rest, "connect": _connect, "grpc-web": _grpc_web, "grpc": _grpc}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_providers_client_credentials_token_is_admitted_with_its_role(
    openid_provider: OpenIdProvider, portico: Server, protocol: str
) -> None:
    call = PROTOCOLS[protocol]
    for algorithm in ("RS256", "ES256"):
        token = openid_provider.token(algorithm)
        started = time.monotonic()
        assert call(portico, token, VERSION) == "ok", algorithm
        # The provider's `roles` claim says viewer: reading is allowed, creating is not.
        refused = call(portico, token, CREATE)
        assert "role 'viewer' may not call CreateCluster" in refused, (algorithm, refused)
        assert refused.startswith(("403", "PERMISSION_DENIED")), refused
        assert time.monotonic() - started < CALL_SECONDS
    # The same token with its signature broken is refused on every protocol alike.
    forged = token.rsplit(".", 1)[0] + ".AAAA"
    assert call(portico, forged, VERSION).startswith(("401", "UNAUTHENTICATED"))
