"""Item 13: a bad setting stops the start with one line naming the variable and what it may be."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from typing import Any

import pytest

from app.cli.commands import main
from app.store import SCHEMA_VERSION, ObjectStore
from tests.harness import run, running


def _started_anyway(*settings: object) -> None:
    raise AssertionError(f"serve started with {settings}")


@pytest.mark.parametrize(
    ("variable", "value", "allowed"),
    [
        ("PORTICO_UNKNOWN_FIELDS", "maybe", "reject, ignore"),
        ("PORTICO_WORKERS", "0", "a whole number from 1 to 64"),
        ("PORTICO_JSON_NAMES", "weird", "proto, camel"),
        ("PORTICO_SIM_FAILURE_RATIO", "7", "a number from 0 to 1"),
        ("PORTICO_SIM_STEP_SECONDS", "nan", "a number from"),
        ("PORTICO_HTTP_PORT", "70000", "a whole number from 0 to 65535"),
        ("PORTICO_PASSWORD_HASH_COST", "1000", "a power of two"),
        ("PORTICO_NODE_SUBNET_POOL", "10.0.0.0/28", "/24 or larger"),
        ("PORTICO_K8S_VERSIONS", "latest", "versions like 1.31.2"),
        ("PORTICO_TRUSTED_PROXIES", "10.0.0.0/33", "CIDR networks"),
        ("PORTICO_TLS_CERT", "/nonexistent/cert.pem", "readable PEM file"),
        ("PORTICO_DATABASE_URL", "mysql://root@db/portico", "postgresql://"),
        ("PORTICO_ADMIN_PASSWORD", "abc", "6-70 bytes"),
        ("PORTICO_JWT_SECRET", "short", "at least 32 bytes"),
        ("PORTICO_DEMO", "perhaps", "true or false"),
        ("PORTICO_RPC_PREFIX", "api/", "a path like /api"),
        ("PORTICO_DATABASE_WAIT_SECONDS", "-1", "a number from 0 to 3600"),
    ],
)
def test_a_bad_setting_stops_serve_with_one_line(monkeypatch, variable, value, allowed):
    monkeypatch.setenv(variable, value)
    monkeypatch.setattr("app.server.serving.serve", _started_anyway)
    with pytest.raises(SystemExit) as stopped:
        main(["serve"])
    message = str(stopped.value.code)
    assert message.startswith(f"portico: {variable}: ")
    assert allowed in message
    assert "\n" not in message


def test_a_bad_flag_is_refused_the_same_way(monkeypatch):
    monkeypatch.setattr("app.server.serving.serve", _started_anyway)
    with pytest.raises(SystemExit) as stopped:
        main(["serve", "--workers", "0"])
    assert str(stopped.value.code).startswith("portico: --workers: 0 is not allowed")


@pytest.mark.parametrize(
    ("variable", "host"),
    [("PORTICO_HTTP_HOST", "192.0.2.1"), ("PORTICO_GRPC_HOST", "2001:db8::1")],
)
def test_a_host_this_machine_cannot_listen_on_stops_serve_with_one_line(
    monkeypatch, tmp_path, variable, host
):
    # A well-formed address of no interface here (documentation ranges). It passed the syntax
    # check and failed deep in the start-up with a traceback, after the store had been opened.
    monkeypatch.setenv(variable, host)
    for setting in ("PORTICO_HTTP_PORT", "PORTICO_GRPC_PORT"):
        monkeypatch.setenv(setting, "0")
    monkeypatch.setenv("PORTICO_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr("app.server.on_uvicorn.serve.run_event_loop", _started_anyway)
    with pytest.raises(SystemExit) as stopped:
        main(["serve"])
    message = str(stopped.value.code)
    assert message.startswith(f"portico: {variable}: cannot listen on {host!r} ("), message
    assert "an address of this machine" in message and "\n" not in message
    assert not (tmp_path / "data").exists()


def _refused_serve(settings: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``portico serve`` on free ports with ``settings``, which must refuse to start."""
    try:
        result = subprocess.run(
            [sys.executable, "-m", "app", "serve", "--http-port", "0", "--grpc-port", "0"],
            env={**os.environ, **settings},
            capture_output=True,
            text=True,
            # Refusing takes a second; a busy machine may make the imports before it take ten.
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{settings}: the server started anyway")
    assert result.returncode != 0
    return result


def test_the_real_command_prints_one_line_and_fails(tmp_path):
    # This one was a traceback; the in-process test above covers the other values.
    variable, value = "PORTICO_SIM_FAILURE_RATIO", "7"
    result = _refused_serve({variable: value, "PORTICO_DATA_DIR": str(tmp_path)})
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"portico: {variable}: ")
    assert not any(tmp_path.iterdir())  # nothing was started or created


def test_a_database_that_cannot_be_reached_stops_serve_with_one_line(tmp_path):
    """A well-formed PostgreSQL URL where nothing answers: 157 lines of chained tracebacks
    ending in "database unavailable; retry shortly" before; now the setting, the URL without
    its password, and what the driver said. (Told not to wait for it: how a start waits is
    test_database_at_start.py's.)"""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://portico:secret-password@127.0.0.1:{port}/portico"
    result = _refused_serve(
        {
            "PORTICO_DATABASE_URL": url,
            "PORTICO_DATA_DIR": str(tmp_path),
            "PORTICO_DATABASE_WAIT_SECONDS": "0",
        }
    )
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        f"portico: PORTICO_DATABASE_URL: cannot use the database "
        f"postgresql://portico:***@127.0.0.1:{port}/portico: "
    )
    assert "refused" in lines[0].lower() and "secret-password" not in result.stderr


@pytest.mark.parametrize("workers", [1, 2])
def test_a_database_of_a_newer_version_stops_serve_with_its_reason(tmp_path, workers):
    """An older Portico started on a database a newer one migrated: one line per process that
    tried, no traceback, and a failing exit status (with two workers too, whose supervisor
    exited 0 when both had died)."""

    async def written_by_a_newer_version() -> None:
        async with ObjectStore.open(f"sqlite:///{tmp_path / 'portico.db'}") as store:

            def newer(conn: Any) -> None:
                conn.exec_driver_sql(
                    "INSERT INTO schema_version (version, applied_at) "
                    f"VALUES ({SCHEMA_VERSION + 1}, '2030-01-01 00:00:00')"
                )

            await store.database.write(newer)

    run(written_by_a_newer_version())
    result = _refused_serve({"PORTICO_DATA_DIR": str(tmp_path), "PORTICO_WORKERS": str(workers)})
    lines = result.stderr.strip().splitlines()
    reason = f"portico: database schema version {SCHEMA_VERSION + 1} is newer than this Portico"
    assert [line.startswith(reason) for line in lines[:workers]] == [True] * workers, lines
    assert "Traceback" not in result.stderr
    if workers > 1:
        assert lines[-1] == f"portico: {workers} of {workers} workers failed"


def test_an_ignored_admin_password_is_said_at_start(tmp_path, caplog):
    async def start_twice() -> None:
        async with running(tmp_path):
            pass
        caplog.clear()
        async with running(tmp_path, admin_password="another-password"):
            pass

    with caplog.at_level(logging.WARNING, logger="portico"):
        run(start_twice())
    said = [r.getMessage() for r in caplog.records if "PORTICO_ADMIN_PASSWORD" in r.getMessage()]
    assert len(said) == 1
    assert "ignored" in said[0]
    assert "portico users set-password admin" in said[0]


def test_a_server_signing_with_another_secret_than_the_last_on_its_database_says_so(
    tmp_path, caplog
):
    """Replicas on one database without a shared PORTICO_JWT_SECRET started silently and then
    refused each other's tokens (401 "Signature verification failed")."""
    first, other = "a" * 48, "b" * 48

    async def starts(secrets: list[str]) -> None:
        for secret in secrets:
            async with running(tmp_path, jwt_secret=secret):
                pass

    def warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if "PORTICO_JWT_SECRET" in r.getMessage()]

    with caplog.at_level(logging.WARNING, logger="portico"):
        run(starts([first, first]))
        assert warnings() == []  # the same secret again: nothing to say
        run(starts([other]))
    [said] = warnings()
    assert "refused by the other" in said and "same PORTICO_JWT_SECRET" in said
