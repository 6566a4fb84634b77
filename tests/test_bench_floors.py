"""The benchmark's floor of (c) does what a create must: every row of one, durable before the
reply, and a refused create leaves nothing behind while the others of its turn commit."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import httpx
import pytest

from tests.bench import baseline
from tests.harness import run


@pytest.fixture
def floor_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(baseline, "_turns", None)
    return tmp_path


def test_the_create_floor_stores_each_create_and_refuses_a_taken_name_alone(floor_dir: Path):
    async def create(names: list[str]) -> list[int]:
        transport = httpx.ASGITransport(app=baseline.create)
        async with httpx.AsyncClient(transport=transport, base_url="http://floor") as client:
            replies = await asyncio.gather(
                *(client.post("/api/v1/cluster", content=json.dumps({"name": n})) for n in names)
            )
        return [reply.status_code for reply in replies]

    assert run(create(["one", "two"])) == [200, 200]
    assert run(create(["three", "one"])) == [200, 409]  # in one turn: one commits, one undone

    db = sqlite3.connect(floor_dir / "floor.db")
    objects = db.execute('SELECT kind, "key" FROM stored_object ORDER BY revision').fetchall()
    events = db.execute('SELECT kind, "key" FROM event_log ORDER BY revision').fetchall()
    expected = [
        (kind, name)
        for name in ("one", "two", "three")
        for kind in ("kaas.cluster", "kaas.cluster_spec")
    ]
    assert objects == events == expected
    reserved = db.execute("SELECT value FROM store_meta WHERE name = ?", (baseline._RESERVED,))
    assert reserved.fetchone() == (3 * 8,)


def test_the_pyvoy_floor_answers_the_bytes_of_a_from_every_worker_on_one_port():
    from tests.bench.procs import Processes
    from tests.bench.servers import pyvoy_floor

    processes = Processes()
    body = b'{"version":"floor"}'
    try:
        with pyvoy_floor(processes, 2, body) as base:
            replies = [httpx.get(f"{base}/api/v1/version") for _ in range(4)]
            assert [(r.status_code, r.content) for r in replies] == [(200, body)] * 4
            assert len(processes.started) == 2
            assert all(process.poll() is None for process in processes.started)
    finally:
        processes.stop_all()
    assert all(process.poll() is not None for process in processes.started)


def test_the_proxy_floors_answer_the_upstreams_reply_through_grpc_aio_and_through_envoy(
    tmp_path: Path,
):
    from tests.bench import proxy_load
    from tests.bench.procs import Processes, free_port

    processes = Processes()
    port = free_port()
    try:
        proxy_load._upstream(processes, port, tmp_path)
        address = f"127.0.0.1:{port}"
        for on_pyvoy in (False, True):
            front = proxy_load._floor(address, on_pyvoy=on_pyvoy)
            with proxy_load._started(processes, front, "") as base:
                reply = httpx.get(f"{base}{proxy_load.SAY}")
                assert reply.status_code == 200
                assert reply.content.startswith(proxy_load.SAY_HELLO)  # SayReply{text: "hello"...}
    finally:
        processes.stop_all()
