"""Item 5: only the workers of one server share its ports; a second server fails naming the port."""

from __future__ import annotations

import subprocess

import pytest

from tests.reliability.server import Server, free_port, start_server


def test_a_second_server_on_a_busy_port_fails_with_one_line_naming_it(tmp_path):
    first = start_server(tmp_path / "first", args=("--workers", "2"))
    try:
        first.wait_ready()  # its two workers share both ports
        for busy, ports in (
            ("HTTP", {"http_port": first.http_port, "grpc_port": free_port()}),
            ("gRPC", {"http_port": free_port(), "grpc_port": first.grpc_port}),
        ):
            second = start_server(tmp_path / f"second-{busy}", **ports)
            code = _exit_code(second, busy)
            port = ports["http_port" if busy == "HTTP" else "grpc_port"]
            assert code != 0
            assert second.log().strip().splitlines() == [
                f"portico: {busy} port {port} on 127.0.0.1 is already in use (another Portico "
                "server or program listens there); stop it or choose another port"
            ]
        first.wait_ready()  # undisturbed
    finally:
        assert first.stop() == 0


def _exit_code(server: Server, busy: str) -> int:
    try:
        return server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        pytest.fail(f"a second server started on the first one's {busy} port")
