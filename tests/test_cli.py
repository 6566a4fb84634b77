"""The ``portico`` command line as a newcomer meets it: --version, --help, the start-up line."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from app import __version__
from app.cli.commands import main
from app.cli.node_agent import default_cert_dir, load_or_create_certificate
from tests.serve_process import Workers


def _output(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as stop:
        main(list(argv))
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_version_is_printed(capsys):
    assert _output(capsys, "--version").strip() == f"portico {__version__}"


@pytest.mark.parametrize("command", [(), ("serve",), ("users",), ("node-agent",), ("openapi",)])
def test_help_is_plain_text(capsys, command):
    text = _output(capsys, *command, "--help")
    assert "``" not in text and "usage: portico" in text


def test_serve_help_shows_each_default_and_its_variable(capsys):
    text = " ".join(_output(capsys, "serve", "--help").split())
    for flag, variable, default in [
        ("--http-port", "PORTICO_HTTP_PORT", "8080"),
        ("--grpc-port", "PORTICO_GRPC_PORT", "50051"),
        ("--http-host", "PORTICO_HTTP_HOST", "127.0.0.1"),
        ("--data-dir", "PORTICO_DATA_DIR", "./data"),
        ("--workers", "PORTICO_WORKERS", "1"),
    ]:
        assert re.search(rf"{flag} \S+ .*?\(\${variable}, default: {re.escape(default)}\)", text)


def test_node_agent_help_names_the_units_and_defaults(capsys):
    text = " ".join(_output(capsys, "node-agent", "--help").split())
    assert "--cpu CPU the node's cpu, in cores" in text
    assert "--memory MEMORY the node's memory, in MiB" in text
    assert "--disk DISK the node's disk, in GiB" in text
    assert "host:port (PORTICO_NODE_SERVER, default: 127.0.0.1:50051)" in text
    assert "--interval INTERVAL seconds between status reports (default: 5)" in text


def test_node_certificates_live_in_the_data_folder_owner_only(tmp_path):
    assert default_cert_dir({}) == Path("data", "node-certs")
    assert default_cert_dir({"PORTICO_DATA_DIR": "/srv/p"}) == Path("/srv/p/node-certs")
    assert default_cert_dir({"PORTICO_NODE_CERT_DIR": "/etc/n"}) == Path("/etc/n")
    cert_dir = default_cert_dir({"PORTICO_DATA_DIR": str(tmp_path)})
    certificate = load_or_create_certificate(cert_dir, "edge-1")
    assert stat.S_IMODE(cert_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((cert_dir / "edge-1.key").stat().st_mode) == 0o600
    assert load_or_create_certificate(cert_dir, "edge-1") == certificate


def test_the_start_line_names_the_version_and_the_ports_bound(two_workers: Workers) -> None:
    for served in two_workers.served:  # each worker says it
        assert served.version == __version__
    served = two_workers.served[0]
    assert httpx.get(f"{served.http_base}/healthz", timeout=5).json() == {"status": "ok"}
    with grpc.insecure_channel(f"127.0.0.1:{served.grpc_port}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        reply = health.Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_workers_given_port_zero_share_the_one_port_picked(two_workers: Workers) -> None:
    first, second = two_workers.served
    assert (first.grpc_port, first.http_base) == (second.grpc_port, second.http_base)
    assert first.grpc_port > 0 and not first.http_base.endswith(":0")
    assert httpx.get(f"{first.http_base}/readyz", timeout=5).status_code == 200
