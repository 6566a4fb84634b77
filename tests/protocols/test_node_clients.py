"""connect-es clients (Connect JSON, Connect binary, gRPC-Web) in Node against a running Portico:
login, a stats RPC, a server stream and the gate's refusals, through npm's own packages."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.dashboard.conftest import live_portico
from tests.harness import ADMIN_PASSWORD
from tests.reliability.server import start_server

from .node_clients import NODE_DIR, prepared_node

CALL_SECONDS = 60


HTTP1 = ["connectJson", "connectBinary", "grpcWeb"]
ONE_PORT = [*HTTP1, "grpc"]  # under pyvoy, native gRPC over HTTP/2 on the same port


def _clients(node: str, base_url: str, transports: list[str]) -> dict[str, dict[str, object]]:
    done = subprocess.run(
        [node, "clients.mjs", base_url, ADMIN_PASSWORD, ",".join(transports)],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=CALL_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    node = prepared_node()
    with live_portico(Path(tmp_path_factory.mktemp("portico"))) as live:
        return _clients(node, f"{live.url}/api", HTTP1)


@pytest.fixture(scope="module")
def one_port_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    node = prepared_node()
    server = start_server(Path(tmp_path_factory.mktemp("pyvoy")) / "data", server="pyvoy")
    try:
        server.wait_ready()
        return _clients(node, f"{server.base_url}/api", ONE_PORT)
    finally:
        server.stop()


@pytest.mark.parametrize("transport", HTTP1)
def test_login_stats_and_a_server_stream(
    report: dict[str, dict[str, object]], transport: str
) -> None:
    _check(report, transport)


@pytest.mark.parametrize("transport", ONE_PORT)
def test_every_protocol_on_pyvoys_one_port(
    one_port_report: dict[str, dict[str, object]], transport: str
) -> None:
    _check(one_port_report, transport)


def _check(report: dict[str, dict[str, object]], transport: str) -> None:
    found = report[transport]
    assert found["accountId"] and found["expires"] is True
    assert found["stats"] is True and found["clusterId"]
    assert f"flavor-{transport.lower()}" in found["flavors"]  # type: ignore[operator]
    assert found["refusal"] == {"code": "Unauthenticated", "message": "missing bearer token"}
    assert found["wrongPassword"] == "Unauthenticated"
