"""What a new user meets on the command line, through the installed ``portico`` command: errors
that say what to do, options where the help puts them, results without log lines, and a check
that tells a server that failed to start from another one answering on its port."""

from __future__ import annotations

import asyncio
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.harness import ADMIN_PASSWORD, running, uvicorn_serving
from tests.harness import run as run_async

PORTICO = str(Path(sys.executable).parent / "portico")
QUIET = {"PORTICO_PASSWORD_HASH_COST": "16", "PORTICO_SIM_NODES": "0"}


def portico(
    *argv: str, stdin: str = "", env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PORTICO, *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **QUIET, **(env or {})},
        cwd=cwd,
        check=False,
    )


@pytest.fixture
def no_login(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTICO_LOGIN_FILE", str(tmp_path / "login.json"))
    monkeypatch.delenv("PORTICO_TOKEN", raising=False)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_call_before_login_says_how_to_log_in(tmp_path: Path, no_login: None, transport: str):
    async def check() -> None:
        async with (
            running(tmp_path / "data") as served,
            uvicorn_serving(served.portico.http_app) as rest,
        ):
            where = [
                "--transport", transport,
                "--grpc", f"127.0.0.1:{served.portico.grpc_port}",
                "--rest", f"http://{rest}",
            ]  # fmt: skip
            result = await asyncio.to_thread(
                portico, "call", "cnct.kaas.api.Cluster/GetClusterList", *where
            )
            assert result.returncode == 1
            assert '"code": 16' in result.stderr
            assert "run `portico login -u USERNAME` first" in result.stderr
            assert "--token or PORTICO_TOKEN" in result.stderr

    run_async(check())


@pytest.mark.parametrize(
    "flags", [["--grpc", "127.0.0.1:1"], ["--transport", "rest", "--rest", "http://127.0.0.1:1"]]
)
def test_an_unreachable_server_is_one_plain_line_on_both_transports(no_login: None, flags):
    result = portico("call", *flags, "cnct.kaas.api.Cluster/GetCluster", '{"name": "a"}')
    assert result.returncode == 1
    assert result.stderr.startswith("portico: cannot reach the server (")
    assert result.stderr.strip().endswith("127.0.0.1:1: Connection refused)")
    assert "failed to connect to all addresses" not in result.stderr
    assert result.stderr.count("\n") <= 1


def test_an_unknown_request_field_is_named_with_the_fields_that_exist(no_login: None):
    result = portico("call", "cnct.kaas.api.Cluster/GetCluster", '{"nme": "first"}')
    assert result.returncode == 1
    assert 'no field "nme" in GetClusterMsg; did you mean "name"?' in result.stderr
    assert "Its fields: name" in result.stderr
    assert "Available Fields" not in result.stderr


def test_a_misspelled_method_or_service_gets_the_close_names(no_login: None):
    method = portico("call", "cnct.kaas.api.Cluster/GetClustr")
    assert method.returncode == 1
    assert "cnct.kaas.api.Cluster has no method 'GetClustr'" in method.stderr
    assert "did you mean cnct.kaas.api.Cluster/GetCluster" in method.stderr
    assert "give it as" not in method.stderr
    service = portico("call", "cnct.kaas.api.Clustr/GetCluster")
    assert "no service 'cnct.kaas.api.Clustr'; did you mean cnct.kaas.api.Cluster/GetCluster?" in (
        service.stderr
    )


def test_users_takes_data_dir_after_the_action_and_prints_only_its_result(tmp_path: Path):
    data = str(tmp_path / "data")
    added = portico("users", "add", "bob", "--role", "viewer", "--password-stdin",
                    "--data-dir", data, stdin="a-good-password\n")  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert (added.stdout, added.stderr) == ("added bob (viewer)\n", "")
    # The audit line is in the log, not beside the result.
    assert "account added: user=bob role=viewer" in (tmp_path / "data" / "audit.log").read_text()
    for argv in (["users", "list", "--data-dir", data], ["users", "--data-dir", data, "list"]):
        listed = portico(*argv)
        assert listed.returncode == 0, listed.stderr
        assert "bob\tviewer\tenabled" in listed.stdout
    disabled = portico("users", "disable", "bob", "--data-dir", data)
    assert (disabled.returncode, disabled.stdout) == (0, "bob disabled\n")


def test_rest_replies_and_errors_end_their_line(tmp_path: Path):
    async def check() -> None:
        async with (
            running(tmp_path / "data") as served,
            uvicorn_serving(served.portico.http_app) as rest,
            httpx.AsyncClient(base_url=f"http://{rest}") as client,
        ):
            refused = await client.get("/api/v1/version")
            assert refused.status_code == 401
            assert refused.content.endswith(b"}\n")
            login = await client.post(
                "/v1/auth:login", json={"username": "admin", "password": ADMIN_PASSWORD}
            )
            assert login.content.endswith(b"}\n")

    run_async(check())


@pytest.fixture
def other_server() -> Iterator[int]:
    """A server that is not Portico, answering ``/readyz`` with 200 on a port of its own."""

    class Ready(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"status":"ready"}')

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ready)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _start(tmp_path: Path, http_port: int) -> tuple[subprocess.Popen[bytes], Path, dict[str, str]]:
    env = {
        **os.environ, **QUIET,
        "PORTICO_HTTP_PORT": str(http_port), "PORTICO_GRPC_PORT": str(_free_port()),
        "PORTICO_ADMIN_PASSWORD": "change-me-now",
    }  # fmt: skip
    log = tmp_path / "portico.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [PORTICO, "serve", "--data-dir", str(tmp_path / "data")],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    return server, log, env


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
    server.wait(timeout=30)


@pytest.mark.slow
def test_ready_waits_for_the_server_it_was_given(tmp_path: Path):
    server, log, env = _start(tmp_path, _free_port())
    try:
        ready = subprocess.run(
            [PORTICO, "ready", "--pid", str(server.pid), "--log", str(log)],
            capture_output=True, text=True, env=env, timeout=90, check=False,
        )  # fmt: skip
        assert ready.returncode == 0, ready.stderr + log.read_text()
        assert ready.stdout.strip() == '{"status":"ready"}'
    finally:
        _stop(server)


@pytest.mark.slow
def test_ready_fails_with_the_reason_when_another_server_holds_the_port(
    tmp_path: Path, other_server: int
):
    server, log, env = _start(tmp_path, other_server)
    try:
        ready = subprocess.run(
            [PORTICO, "ready", "--pid", str(server.pid), "--log", str(log)],
            capture_output=True, text=True, env=env, timeout=90, check=False,
        )  # fmt: skip
        # The other server answers "ready", but it is not the one started: either it is caught
        # answering, or the server started exits first and its own reason is told.
        assert ready.returncode == 1
        assert ready.stdout == ""
        said = ready.stderr
        assert (
            f"another server (pid unknown) answers on http://127.0.0.1:{other_server}" in said
            or (
                f"the server {server.pid} exited before it was ready" in said
                and str(other_server) in said
            )
        ), said
    finally:
        _stop(server)


@pytest.mark.slow
def test_ready_tells_why_a_server_exited(tmp_path: Path):
    env = {**os.environ, **QUIET, "PORTICO_HTTP_PORT": "99999"}  # refused at start
    log = tmp_path / "portico.log"
    with log.open("wb") as out:
        server = subprocess.Popen([PORTICO, "serve"], stdout=out, stderr=subprocess.STDOUT,
                                  env=env, cwd=tmp_path)  # fmt: skip
    server.wait(timeout=60)  # exited, not yet reaped by a shell: ready must still tell
    ready = portico(
        "ready", "--pid", str(server.pid), "--log", str(log), env={"PORTICO_HTTP_PORT": "99999"}
    )
    assert ready.returncode == 1
    assert f"the server {server.pid} exited before it was ready: " in ready.stderr
    assert "PORTICO_HTTP_PORT" in ready.stderr
