"""``portico ready`` waits for the server it was told about where that server really serves: the
port of its own ``--http-port`` flag (however this shell's variables differ), the port its
start-up line names (``--http-port 0`` included), or the one ``--http-port``/``--url`` give."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.test_cli_first_hour import (
    PORTICO,
    QUIET,
    _free_port,
    _stop,
    other_server,  # noqa: F401  (a fixture)
)

pytestmark = pytest.mark.slow  # servers as processes: scheduled first (tests/conftest.py)


def _serve(tmp_path: Path, *flags: str) -> tuple[subprocess.Popen[bytes], Path]:
    """``portico serve FLAGS`` with no PORTICO_*_PORT in its environment, its log in a file."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_HTTP_PORT", "_GRPC_PORT"))}
    env |= {**QUIET, "PORTICO_ADMIN_PASSWORD": "change-me-now"}
    log = tmp_path / "portico.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [PORTICO, "serve", "--data-dir", str(tmp_path / "data"), *flags],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    return server, log


def _ready(*argv: str, shell_port: int) -> subprocess.CompletedProcess[str]:
    # This shell says another port (where another server answers ready): the case.
    env = {**os.environ, "PORTICO_HTTP_PORT": str(shell_port)}
    return subprocess.run(
        [PORTICO, "ready", *argv], capture_output=True, text=True, env=env, timeout=150,
        check=False,
    )  # fmt: skip


def test_ready_finds_the_port_of_the_servers_own_flag(tmp_path: Path, other_server: int):  # noqa: F811
    port = _free_port()
    server, log = _serve(tmp_path, "--http-port", str(port), "--grpc-port", str(_free_port()))
    try:
        pid = str(server.pid)
        for where in ([], ["--http-port", str(port)], ["--url", f"http://127.0.0.1:{port}"]):
            ready = _ready("--pid", pid, "--timeout", "120", *where, shell_port=other_server)
            assert (ready.returncode, ready.stdout.strip()) == (0, '{"status":"ready"}'), (
                ready.stderr + log.read_text()
            )
    finally:
        _stop(server)


def test_ready_finds_a_free_port_in_the_start_up_line(tmp_path: Path, other_server: int):  # noqa: F811
    server, log = _serve(tmp_path, "--http-port", "0", "--grpc-port", "0")
    try:
        ready = _ready("--pid", str(server.pid), "--log", str(log), "--timeout", "120",
                       shell_port=other_server)  # fmt: skip
        assert (ready.returncode, ready.stdout.strip()) == (0, '{"status":"ready"}'), (
            ready.stderr + log.read_text()
        )
    finally:
        _stop(server)
