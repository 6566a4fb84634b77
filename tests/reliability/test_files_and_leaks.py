"""Item 11: private files, no database driver text for callers, no local paths in replies."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sqlite3
import stat
import weakref
from pathlib import Path

import grpc

from gen.cnct.kaas.api import api_pb2, api_pb2_grpc
from tests.harness import run, running


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_data_folder_and_its_files_are_the_owners_alone(tmp_path):
    data = tmp_path / "data"

    async def start_write_and_look() -> dict[str, int]:
        async with running(data) as server:
            token = await server.login()
            reply = await server.http.post(
                "/v1/auth:logout", json={}, headers={"authorization": f"Bearer {token}"}
            )
            assert reply.status_code == 200
            # While it runs: SQLite removes its WAL and shared-memory files on a clean close.
            return {p.name: _mode(p) for p in data.iterdir() if p.is_file()}

    files = run(start_write_and_look())
    assert {"portico.db", "portico.db-wal", "portico.db-shm", "portico.db.write-lock"} <= set(files)
    assert files == dict.fromkeys(files, 0o600)
    assert _mode(data) == 0o700

    # Files an older start left readable by everyone are made private again.
    (data / "portico.db").chmod(0o644)
    data.chmod(0o755)
    assert set(run(start_write_and_look()).values()) == {0o600}
    assert _mode(data) == 0o700


def test_database_driver_messages_reach_the_log_not_the_caller(tmp_path, caplog):
    async def break_the_database_and_call() -> tuple[int, dict, str, grpc.aio.AioRpcError]:
        async with running(tmp_path) as server:
            token = await server.login()
            # On a thread: waiting for the write lock on the server's event loop would keep
            # the server from ever committing what holds it.
            await asyncio.to_thread(_drop_objects, tmp_path / "portico.db")
            reply = await server.http.get(
                "/api/v1/cluster/list", headers={"authorization": f"Bearer {token}"}
            )
            stub = api_pb2_grpc.ClusterStub(server.channel)
            try:
                await stub.GetClusterList(
                    api_pb2.GetClusterListMsg(),
                    metadata=(("authorization", f"Bearer {token}"), ("x-request-id", "rid-grpc")),
                )
            except grpc.aio.AioRpcError as error:
                failure = error
            return reply.status_code, reply.json(), reply.headers["x-request-id"], failure

    with caplog.at_level(logging.WARNING):
        status, body, request_id, failure = run(break_the_database_and_call())
    assert status == 503
    assert body["message"] == f"database unavailable; retry shortly (request id {request_id})"
    assert failure.code() is grpc.StatusCode.UNAVAILABLE
    assert failure.details() == "database unavailable; retry shortly (request id rid-grpc)"
    logged = [r.getMessage() for r in caplog.records]
    # The first failure's line names its request id and what the driver said; the gRPC call's,
    # a moment later, is counted into the next such line (one a kind per interval: an outage
    # fails every call at once).
    assert any(request_id in line and "no such table: stored_object" in line for line in logged)


def _drop_objects(database: Path) -> None:
    with contextlib.closing(sqlite3.connect(database)) as db:
        db.execute("DROP TABLE stored_object")


def test_runtime_info_shows_no_local_paths(tmp_path):
    async def info() -> str:
        async with running(tmp_path) as server:
            token = await server.login()
            reply = await server.http.get(
                "/v1/runtime/info", headers={"authorization": f"Bearer {token}"}
            )
            assert reply.status_code == 200
            return reply.text

    text = run(info())
    assert str(tmp_path.resolve()) not in text and str(tmp_path) not in text
    assert '"api_version":"1.0.0-alpha"' in text.replace(" ", "")


def test_a_stopped_server_is_freed_with_everything_it_held(tmp_path):
    """A process starting servers one after another (an embedding, the test suite) keeps none
    of them: held by a library's cache, each stayed, and collections grew to pauses of a second
    that failed nodes whose grace was shorter."""

    async def serve_once() -> weakref.ref[object]:
        async with running(tmp_path, metrics=True) as server:
            for path in ("/healthz", "/readyz", "/openapi.json", "/metrics"):
                assert (await server.http.get(path)).status_code == 200, path
            return weakref.ref(server.portico)

    stopped = run(serve_once())
    gc.collect()
    assert stopped() is None
