"""Item 12: TLS on both transports from real certificates, and client certificates on gRPC."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import ssl
import subprocess
import sys
from pathlib import Path

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from app.server.tls import check_tls_files
from app.settings.config import ConfigurationError, Settings
from gen.scheduler import scheduler_pb2, scheduler_pb2_grpc
from gen.services.auth import auth_pb2, auth_pb2_grpc
from tests.harness import ADMIN_PASSWORD
from tests.reliability.certificates import Authority, Issued
from tests.reliability.server import ROOT, START_TIMEOUT, Server, start_server, wait_for

pytestmark = pytest.mark.slow  # seconds per test: scheduled first (tests/conftest.py)


def test_both_transports_serve_tls_and_grpc_wants_a_client_certificate(tmp_path, http_server):
    servers = Authority(tmp_path / "pki", "Server CA")
    clients = Authority(tmp_path / "pki", "Client CA")
    server_cert = servers.issue("portico", server=True)
    client_cert = clients.issue("edge-tool", server=False)
    stranger = Authority(tmp_path / "pki", "Other CA").issue("stranger", server=False)
    server = start_server(
        tmp_path / "data",
        args=(
            "--tls-cert",
            str(server_cert.cert_path),
            "--tls-key",
            str(server_cert.key_path),
            "--tls-client-ca",
            str(clients.issued.cert_path),
        ),
        scheme="https",
        server=http_server,
    )
    try:
        verify = ssl.create_default_context(cafile=servers.issued.cert_path)
        server.wait_ready(verify=verify)
        # The image's health probe follows the TLS setting (plain HTTP would be refused).
        probe_env = {
            **os.environ,
            "PORTICO_HTTP_PORT": str(server.http_port),
            "PORTICO_TLS_CERT": str(server_cert.cert_path),
        }
        probe = [sys.executable, "-m", "app.cli.healthcheck"]
        assert subprocess.run(probe, env=probe_env, cwd=ROOT, check=False).returncode == 0
        # REST: TLS only (browsers have no client certificates), verified against the CA.
        login = {"username": "admin", "password": ADMIN_PASSWORD}
        reply = httpx.post(f"{server.base_url}/v1/auth:login", json=login, verify=verify)
        assert reply.status_code == 200
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{server.http_port}/readyz", timeout=5)

        address = f"127.0.0.1:{server.grpc_port}"
        trusted = servers.issued.cert_pem
        token, refused = asyncio.run(_grpc_calls(address, trusted, client_cert, stranger))
        assert token
        # Without TLS, and with a certificate of another CA, no connection; under pyvoy (one
        # port for HTTP clients too) a TLS connection without a client certificate is made,
        # and its gRPC calls are refused.
        unverified = (
            grpc.StatusCode.UNAUTHENTICATED
            if http_server == "pyvoy"
            else (grpc.StatusCode.UNAVAILABLE)
        )
        assert refused == [grpc.StatusCode.UNAVAILABLE, unverified, grpc.StatusCode.UNAVAILABLE]
        # A node agent connects with the server's CA and a client certificate.
        node_cert = clients.issue("edge-1", server=False)
        agent_flags = (
            f"--tls-ca={servers.issued.cert_path}",
            f"--tls-cert={node_cert.cert_path}",
            f"--tls-key={node_cert.key_path}",
        )
        assert "registered" in _node_agent_registers(server, agent_flags, tmp_path)
        # It registered its TLS identity, not a self-signed certificate of its own: none was
        # made, and the verified client certificate (an empty ``certificate``) is the same node.
        assert not (tmp_path / "node").exists()
        first, again = asyncio.run(_register_by_client_certificate(address, trusted, node_cert))
        assert (first.code, again.code, again.subnet) == (0, 0, first.subnet)
        assert "'edge-1' was already registered" in first.description
        assert "'edge-1' was already registered" in again.description
    finally:
        assert server.stop() == 0


async def _grpc_calls(
    address: str, trusted: bytes, client: Issued, stranger: Issued
) -> tuple[str, list[grpc.StatusCode]]:
    """A login with a client certificate; health checks without TLS, without a client
    certificate, and with one from a CA the server does not trust."""
    credentials = grpc.ssl_channel_credentials(trusted, client.key_pem, client.cert_pem)
    async with grpc.aio.secure_channel(address, credentials) as channel:
        stub = auth_pb2_grpc.AuthServiceStub(channel)
        request = auth_pb2.LoginRequest(username="admin", password=ADMIN_PASSWORD)
        token = (await stub.Login(request, timeout=10)).token
    refused = []
    for channel in (
        grpc.aio.insecure_channel(address),
        grpc.aio.secure_channel(address, grpc.ssl_channel_credentials(trusted)),
        grpc.aio.secure_channel(
            address, grpc.ssl_channel_credentials(trusted, stranger.key_pem, stranger.cert_pem)
        ),
    ):
        async with channel:
            try:
                await health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(), timeout=5
                )
                refused.append(grpc.StatusCode.OK)
            except grpc.aio.AioRpcError as error:
                refused.append(error.code())
    return token, refused


async def _register_by_client_certificate(
    address: str, trusted: bytes, node: Issued
) -> list[scheduler_pb2.NodeRegisterReply]:
    """As the node account edge-1, ``Register`` twice with no certificate in the request."""
    credentials = grpc.ssl_channel_credentials(trusted, node.key_pem, node.cert_pem)
    async with grpc.aio.secure_channel(address, credentials) as channel:
        login = auth_pb2.LoginRequest(username="edge-1", password="agent-password")
        token = (await auth_pb2_grpc.AuthServiceStub(channel).Login(login, timeout=10)).token
        metadata = (("authorization", f"Bearer {token}"),)
        nodes = scheduler_pb2_grpc.NodeServiceStub(channel)
        register = scheduler_pb2.NodeRegisterRequest()
        return [await nodes.Register(register, metadata=metadata, timeout=10) for _ in range(2)]


def _node_agent_registers(server: Server, flags: tuple[str, ...], tmp_path: Path) -> str:
    """Add a node account with the CLI, run ``portico node-agent`` until it has registered;
    returns what it printed."""
    env = {**os.environ, **server.env, "PORTICO_NODE_USERNAME": "edge-1"}
    add_node_account = ["users", "add", "edge-1", "--role", "node", "--password-stdin"]
    subprocess.run(
        # A pipe is read only when asked to (--password-stdin).
        [sys.executable, "-m", "app", *add_node_account],
        input="agent-password\n",
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = tmp_path / "agent.log"
    with open(output, "wb") as log:
        agent = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "app",
                "node-agent",
                "--cpu=1",
                "--memory=64",
                "--disk=1",
                f"--server=127.0.0.1:{server.grpc_port}",
                f"--cert-dir={tmp_path / 'node'}",
                *flags,
            ],
            env={**env, "PORTICO_NODE_PASSWORD": "agent-password"},
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        return wait_for(
            "the node agent registers over TLS",
            lambda: "node edge-1:" in output.read_text() and output.read_text(),
            START_TIMEOUT,
        )
    finally:
        agent.terminate()
        agent.wait(timeout=20)


def test_a_key_that_does_not_match_its_certificate_stops_the_start(tmp_path):
    authority = Authority(tmp_path, "Some CA")
    one, other = authority.issue("one", server=True), authority.issue("other", server=True)
    settings = Settings(tls_cert=str(one.cert_path), tls_key=str(other.key_path))
    with pytest.raises(ConfigurationError, match=r"^PORTICO_TLS_CERT/PORTICO_TLS_KEY: "):
        check_tls_files(settings)
    with pytest.raises(ConfigurationError, match=r"^PORTICO_TLS_KEY: must be set too"):
        dataclasses.replace(settings, tls_key="")
    with pytest.raises(ConfigurationError, match=r"^PORTICO_TLS_CLIENT_CA: needs TLS"):
        Settings(tls_client_ca=str(authority.issued.cert_path))
