"""connect-es clients (Connect JSON, Connect binary, gRPC-Web) in Node against a running Portico:
login, a stats RPC, a server stream and the gate's refusals, through npm's own packages."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.dashboard.conftest import live_portico
from tests.harness import ADMIN_PASSWORD

from .node_clients import NODE_DIR, prepared_node

CALL_SECONDS = 60


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    node = prepared_node()
    with live_portico(Path(tmp_path_factory.mktemp("portico"))) as live:
        done = subprocess.run(
            [node, "clients.mjs", f"{live.url}/api", ADMIN_PASSWORD],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=CALL_SECONDS,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("transport", ["connectJson", "connectBinary", "grpcWeb"])
def test_login_stats_and_a_server_stream(
    report: dict[str, dict[str, object]], transport: str
) -> None:
    found = report[transport]
    assert found["accountId"] and found["expires"] is True
    assert found["stats"] is True and found["clusterId"]
    assert f"flavor-{transport.lower()}" in found["flavors"]  # type: ignore[operator]
    assert found["refusal"] == {"code": "Unauthenticated", "message": "missing bearer token"}
    assert found["wrongPassword"] == "Unauthenticated"
