"""Item: a REST call still running when the shutdown grace ends is answered 503 UNAVAILABLE.

Once, uvicorn cancelled such a call at the grace's end and answered HTTP 500 with a traceback in
the log; and a call whose thread waited in SQLite's busy timeout (another process holding the
database's write lock) kept the process alive after the grace, as long as that timeout and the
store's close wait. Now the call ends as every refusal does (a ``google.rpc.Status`` body, the
request id header) and the process exits 0 within the grace.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from tests.harness import eventually, run
from tests.reliability.server import login, start_server

pytestmark = pytest.mark.slow  # seconds per test: scheduled first (tests/conftest.py)

GRACE = 2.0
FLAVOR = {"key": {"name": "x1.slow"}, "ram": 1024, "vcpus": 1}


def _write_lock_taken(path: Path) -> bool:
    """Whether a writer of the server holds its process queue's lock (it then waits for
    SQLite's own write lock, which this test holds)."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock this probe took
    return False


def test_a_call_still_running_when_the_grace_ends_gets_503_and_the_process_exits_in_time(
    tmp_path: Path, http_server: str
) -> None:
    data = tmp_path / "data"
    server = start_server(
        data, env={"PORTICO_SHUTDOWN_GRACE_SECONDS": str(GRACE)}, server=http_server
    )
    holder: sqlite3.Connection | None = None

    async def scenario() -> tuple[httpx.Response, httpx.Response, float]:
        nonlocal holder
        token = login(server)
        # Another process holds SQLite's write lock: the server's write waits in the busy
        # timeout (5 s), longer than the grace.
        holder = sqlite3.connect(data / "portico.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
            headers = {"authorization": f"Bearer {token}", "x-request-id": "slow-one"}
            call = asyncio.ensure_future(http.post("/create/flavor", json=FLAVOR, headers=headers))
            # The same RPC over Connect, queued behind it.
            connect = asyncio.ensure_future(
                http.post(
                    "/edgeproto.FlavorApi/CreateFlavor",
                    json={**FLAVOR, "key": {"name": "x1.slower"}},
                    headers={
                        **headers,
                        "x-request-id": "slow-two",
                        "connect-protocol-version": "1",
                    },
                )
            )

            async def waiting_for_sqlite() -> bool:
                return not call.done() and _write_lock_taken(data / "portico.db.write-lock")

            await eventually(waiting_for_sqlite, 10, what="the call waits for the write lock")
            signalled = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            return await call, await connect, signalled

    try:
        server.wait_ready()
        reply, connect_reply, signalled = run(scenario())
        code = server.process.wait(timeout=GRACE + 15)
        took = time.monotonic() - signalled
    finally:
        server.kill()
        if holder is not None:
            holder.close()
    assert reply.status_code == 503, reply.text
    assert reply.json() == {"code": 14, "message": "server shutting down", "details": []}
    assert reply.headers["x-request-id"] == "slow-one"
    assert connect_reply.status_code == 503, connect_reply.text
    assert connect_reply.json() == {"code": "unavailable", "message": "server shutting down"}
    assert connect_reply.headers["x-request-id"] == "slow-two"
    assert code == 0, server.log()
    assert took < GRACE + 1.5, f"exited {took:.1f} s after SIGTERM"
    assert "Traceback" not in server.log(), server.log()


def _leader_lock_free(path: Path) -> bool:
    """Whether no process holds the leader's lock (another could take the leadership)."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_the_leader_steps_down_at_once_while_its_calls_drain(tmp_path: Path) -> None:
    """A stopping leader held the leadership, and ran its background work, until every call in
    flight had ended (up to the grace, and then the store's close): under load that was tens of
    seconds in which no other process could take over. It now steps down when the stop begins."""
    data = tmp_path / "data"
    grace = 10.0
    server = start_server(data, env={"PORTICO_SHUTDOWN_GRACE_SECONDS": str(grace)})
    holder: sqlite3.Connection | None = None

    async def scenario() -> float:
        nonlocal holder
        token = login(server)
        leader_lock = data / "portico.db.leader"

        async def leading() -> bool:
            return not _leader_lock_free(leader_lock)

        await eventually(leading, 10, what="the server is the leader")
        holder = sqlite3.connect(data / "portico.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
            headers = {"authorization": f"Bearer {token}"}
            call = asyncio.ensure_future(http.post("/create/flavor", json=FLAVOR, headers=headers))

            async def waiting_for_sqlite() -> bool:
                return not call.done() and _write_lock_taken(data / "portico.db.write-lock")

            await eventually(waiting_for_sqlite, 10, what="the call waits for the write lock")
            signalled = time.monotonic()
            server.process.send_signal(signal.SIGTERM)

            async def stepped_down() -> bool:
                return _leader_lock_free(leader_lock)

            await eventually(stepped_down, grace, what="the leader's lock is free")
            took = time.monotonic() - signalled
            assert not call.done()  # still draining
            holder.rollback()
            await call
            return took

    try:
        server.wait_ready()
        took = run(scenario())
        code = server.process.wait(timeout=grace + 15)
    finally:
        server.kill()
        if holder is not None:
            holder.close()
    assert code == 0, server.log()
    assert took < 2, f"the leader stepped down {took:.1f} s after SIGTERM"
