"""A replica started while its PostgreSQL is down waits for it (``PORTICO_DATABASE_WAIT_SECONDS``),
saying so, and comes up once it answers; past the wait it stops with one line.

It exited after 3-5 s with that line and did not try again: a compose file or a pod starting
Portico beside its database lost the race more often than not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.harness import ADMIN_PASSWORD
from tests.reliability.own_postgres import OwnPostgres, own_postgres
from tests.reliability.server import ROOT, free_port, start_server, wait_for

pytestmark = pytest.mark.slow

WAIT = "PORTICO_DATABASE_WAIT_SECONDS"


@pytest.fixture(scope="module")
def postgres() -> Iterator[OwnPostgres]:
    with own_postgres() as server:
        yield server


@pytest.mark.postgres
def test_a_replica_started_while_the_database_is_down_comes_up_once_it_answers(
    tmp_path: Path, postgres: OwnPostgres
) -> None:
    url = postgres.create_database("started_early")
    postgres.stop()
    server = start_server(tmp_path / "data", env={"PORTICO_DATABASE_URL": url, WAIT: "120"})
    try:
        wait_for(
            "the replica says it waits for the database",
            lambda: "does not answer" in server.log() or server.process.poll() is not None,
            60,
        )
        assert server.process.poll() is None, server.log()
        postgres.start()
        server.wait_ready()
        login = httpx.post(
            f"{server.base_url}/v1/auth:login",
            json={"username": "admin", "password": ADMIN_PASSWORD},
            timeout=10,
        )
        assert login.status_code == 200, login.text
    finally:
        server.stop()
        postgres.start_again()
    log = server.log()
    said = [line for line in log.splitlines() if "does not answer" in line]
    assert said and all(f"({WAIT})" in line for line in said), log
    assert "Traceback" not in log, log


def test_past_the_wait_a_replica_stops_with_one_line(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there: a PostgreSQL that is down
    url = f"postgresql://portico:secret-password@127.0.0.1:{port}/portico"
    started = time.monotonic()
    result = _serve({"PORTICO_DATABASE_URL": url, WAIT: "3"}, tmp_path)
    took = time.monotonic() - started
    *progress, last = result.stderr.strip().splitlines()
    assert result.returncode != 0, result.stderr
    # Progress while it waited, then the one line saying why it stopped.
    assert any("does not answer" in line and "trying again" in line for line in progress)
    assert last.startswith(
        f"portico: PORTICO_DATABASE_URL: cannot use the database "
        f"postgresql://portico:***@127.0.0.1:{port}/portico: "
    ), result.stderr
    assert "refused" in last.lower() and last.endswith(f"tried for 3 s ({WAIT})"), last
    assert "secret-password" not in result.stderr and "Traceback" not in result.stderr
    assert took >= 3, f"stopped after {took:.1f} s, before the wait was over"


@pytest.mark.postgres
def test_a_refusal_that_waiting_cannot_mend_stops_the_start_at_once(
    tmp_path: Path, postgres: OwnPostgres
) -> None:
    url = postgres.url("no_such_database")  # the server answers, and refuses it
    result = _serve({"PORTICO_DATABASE_URL": url, WAIT: "600"}, tmp_path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0
    assert lines == [lines[-1]], result.stderr  # no waiting, no progress
    assert 'database "no_such_database" does not exist' in lines[-1], lines[-1]


def _serve(settings: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``portico serve`` on free ports with ``settings``, run until it stops by itself."""
    return subprocess.run(
        [sys.executable, "-m", "app", "serve", "--http-port", "0", "--grpc-port", "0"],
        cwd=ROOT,
        env={**os.environ, "PORTICO_DATA_DIR": str(tmp_path / "data"), **settings},
        capture_output=True,
        text=True,
        timeout=120,  # a busy machine makes the imports alone take seconds
    )
