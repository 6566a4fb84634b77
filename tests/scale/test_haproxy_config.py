"""The replica harness's HAProxy configuration is one HAProxy accepts, with both transports
health-checked on /readyz, and whose checks pass on a replica of each server Portico offers (the
harness itself is a separate command: tests/scale/run.py)."""

from __future__ import annotations

import csv
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require
from tests.reliability.server import free_port, start_server, wait_for
from tests.scale.haproxy import Replica, config


def test_haproxy_accepts_the_harness_configuration(tmp_path):
    if shutil.which("haproxy") is None:
        require("haproxy", "apt-get install haproxy")
    replicas = [Replica(f"r{i}", 18000 + i, 19000 + i) for i in range(1, 4)]
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(17080, 17051, replicas))
    checked = subprocess.run(
        ["haproxy", "-c", "-f", str(path)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    text = path.read_text()
    assert text.count("option httpchk GET /readyz") == 2  # REST and gRPC backends
    for r in replicas:
        assert f"127.0.0.1:{r.http_port} check" in text
        assert f"127.0.0.1:{r.grpc_port} proto h2 check port {r.http_port}" in text


@pytest.mark.slow  # three servers as processes: scheduled first (tests/conftest.py)
def test_haproxy_marks_a_replica_of_each_server_up(tmp_path):
    # HAProxy's `option httpchk GET /readyz` asks in HTTP/1.0, without a Host header: pyvoy's
    # Envoy once answered 426 Upgrade Required, and every pyvoy replica stayed DOWN.
    if shutil.which("haproxy") is None:
        require("haproxy", "apt-get install haproxy")
    servers = {name: start_server(tmp_path / name, server=name) for name in ("uvicorn", "pyvoy")}
    balancer = None
    try:
        for server in servers.values():
            server.wait_ready()
        replicas = [Replica(name, s.http_port, s.grpc_port) for name, s in servers.items()]
        socket_path = tmp_path / "haproxy.sock"
        text = config(free_port(), free_port(), replicas)
        # Beside the harness's configuration, a socket to read the checks' outcomes from.
        path = tmp_path / "haproxy.cfg"
        path.write_text(text.replace("global\n", f"global\n    stats socket {socket_path}\n", 1))
        with (tmp_path / "haproxy.log").open("wb") as log:
            balancer = subprocess.Popen(["haproxy", "-db", "-f", str(path)], stdout=log, stderr=log)
        expected = {(backend, name) for backend in ("rest", "grpc") for name in servers}
        # Checks every 500 ms; a replica is marked DOWN after two that fail.
        wait_for(
            "HAProxy's checks pass on every replica",
            lambda: _checked_up(socket_path) == expected,
            20,
        )
    finally:
        if balancer is not None:
            balancer.terminate()
            balancer.wait(10)
        for server in servers.values():
            assert server.stop() == 0


def _checked_up(socket_path: Path) -> set[tuple[str, str]]:
    """The (backend, server) pairs HAProxy holds UP after a passing HTTP check, from its stats."""
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(socket_path))
            sock.sendall(b"show stat\n")
            answer = b"".join(iter(lambda: sock.recv(65536), b""))
    except OSError:
        return set()
    rows = list(csv.reader(answer.decode().lstrip("# ").splitlines()))
    if not rows:
        return set()
    header, *lines = rows
    fields = [dict(zip(header, line, strict=False)) for line in lines if line]
    return {
        (row["pxname"].removeprefix("portico_"), row["svname"])
        for row in fields
        if row.get("status") == "UP" and row.get("check_status") == "L7OK"
    }
