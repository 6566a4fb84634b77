"""Every create the server acknowledged is there after it is killed (SIGKILL) mid-writes and
started again, on SQLite and on PostgreSQL: the real ``portico serve``, killed as a crash would,
while concurrent creates share commits (group commit): a reply never runs ahead of the fsync."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from pathlib import Path

import httpx
import pytest

from tests.reliability.server import Server, login, start_server, wait_for

pytestmark = pytest.mark.slow  # seconds per test: scheduled first (tests/conftest.py)

WRITERS = 32
ACKNOWLEDGED_BEFORE_KILL = 100
COMMITS = "portico_store_group_commits_total"
COMMITTED = "portico_store_group_committed_transactions_total"


def test_acknowledged_creates_survive_a_sigkill(tmp_path: Path, store_url: str):
    env = {"PORTICO_DATABASE_URL": store_url}
    server = start_server(tmp_path / "data", env=env)
    acknowledged: list[str] = []
    try:
        server.wait_ready()
        token = login(server)
        lock = threading.Lock()

        def write(writer: int) -> None:
            with httpx.Client(base_url=server.base_url, timeout=10) as http:
                for n in range(10_000):
                    name = f"op-{writer}-{n}"
                    try:
                        reply = http.post(
                            "/create/operator",
                            json={"key": {"name": name}},
                            headers={"authorization": f"Bearer {token}"},
                        )
                    except httpx.TransportError:
                        return  # the server is gone: this create was never acknowledged
                    assert reply.status_code == 200, reply.text
                    with lock:
                        acknowledged.append(name)

        writers = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
        for thread in writers:
            thread.start()
        wait_for(
            f"{ACKNOWLEDGED_BEFORE_KILL} acknowledged creates",
            lambda: len(acknowledged) >= ACKNOWLEDGED_BEFORE_KILL,
            60,
        )
        shared = _transactions_per_commit(server)
        server.kill()  # while the writers keep writing: most likely mid-group
        for thread in writers:
            thread.join(timeout=30)
    finally:
        server.kill()

    restarted = start_server(tmp_path / "data", env=env)
    try:
        restarted.wait_ready()
        stored = _operators(restarted, login(restarted))
    finally:
        assert restarted.stop() == 0
    missing = sorted(set(acknowledged) - stored)
    assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged creates lost"
    assert shared > 1, f"the concurrent creates did not share commits ({shared:.2f} per commit)"
    if store_url.startswith("sqlite"):
        with contextlib.closing(sqlite3.connect(store_url.removeprefix("sqlite:///"))) as db:
            assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def _transactions_per_commit(server: Server) -> float:
    """Write transactions per database commit so far, from the server's metrics."""
    text = httpx.get(f"{server.base_url}/metrics", timeout=30).text
    values = dict(line.split() for line in text.splitlines() if line.startswith("portico_store_g"))
    return float(values[COMMITTED]) / float(values[COMMITS])


def _operators(server: Server, token: str) -> set[str]:
    reply = httpx.post(
        f"{server.base_url}/show/operator",
        json={},
        headers={"authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    lines = [json.loads(line) for line in reply.text.splitlines() if line.strip()]
    return {line["result"]["key"]["name"] for line in lines}
