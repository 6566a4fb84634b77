"""Item 5: only the workers of one server share its ports; a second server fails naming the port."""

from __future__ import annotations

import subprocess

import httpx
import pytest

from tests.reliability.server import Server, free_port, start_server
from tests.serve_process import Workers

pytestmark = pytest.mark.slow  # seconds per test: scheduled first (tests/conftest.py)


def test_a_second_server_on_a_busy_port_fails_with_one_line_naming_it(
    tmp_path, two_workers: Workers
):
    first = two_workers.served[0]  # its two workers share both ports
    http_port = int(first.http_base.rsplit(":", 1)[1])
    busy_ports = {
        "HTTP": {"http_port": http_port, "grpc_port": free_port()},
        "gRPC": {"http_port": free_port(), "grpc_port": first.grpc_port},
    }
    # Both second servers at once: each start costs seconds.
    seconds = {
        busy: start_server(tmp_path / f"second-{busy}", **ports)
        for busy, ports in busy_ports.items()
    }
    for busy, second in seconds.items():
        code = _exit_code(second, busy)
        ports = busy_ports[busy]
        port = ports["http_port" if busy == "HTTP" else "grpc_port"]
        assert code != 0
        assert second.log().strip().splitlines() == [
            f"portico: {busy} port {port} on 127.0.0.1 is already in use (another Portico "
            "server or program listens there); stop it or choose another port"
        ]
    assert httpx.get(f"{first.http_base}/readyz", timeout=5).status_code == 200  # undisturbed


def _exit_code(server: Server, busy: str) -> int:
    try:
        return server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        pytest.fail(f"a second server started on the first one's {busy} port")


def test_pyvoy_workers_share_one_port_and_a_second_server_fails_on_it(tmp_path):
    first = start_server(tmp_path / "first", server="pyvoy", args=("--workers", "2"))
    try:
        first.wait_ready()
        # Request ids begin with a prefix of their process: new connections reach both workers.
        prefixes = set()
        for _ in range(200):
            with httpx.Client(base_url=first.base_url, timeout=5) as client:
                prefixes.add(client.get("/api/v1/version").headers["x-request-id"][:16])
            if len(prefixes) == 2:
                break
        assert len(prefixes) == 2
        for server in ("pyvoy", "uvicorn"):
            second = start_server(
                tmp_path / f"second-{server}", http_port=first.http_port, server=server
            )
            assert _exit_code(second, "HTTP") != 0
            assert second.log().strip().splitlines() == [
                f"portico: HTTP port {first.http_port} on 127.0.0.1 is already in use (another "
                "Portico server or program listens there); stop it or choose another port"
            ]
        assert httpx.get(f"{first.base_url}/readyz", timeout=5).status_code == 200
    finally:
        assert first.stop() == 0
