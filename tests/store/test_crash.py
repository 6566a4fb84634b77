"""Crashes and other processes: acknowledged writes survive SIGKILL; processes see each other."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3

import pytest

from app.store import ObjectStore
from tests.store.conftest import run
from tests.store.peer import MACHINES_PER_CLUSTER

ACKNOWLEDGED_BEFORE_KILL = 25


def test_acknowledged_writes_survive_a_sigkill(store_url, spawn_peer):
    writer = spawn_peer(store_url, "write-loop")
    acknowledged = [int(writer.next_line(timeout=20)) for _ in range(ACKNOWLEDGED_BEFORE_KILL)]
    writer.kill()  # most likely in the middle of a transaction
    acknowledged += [int(line) for line in writer.lines_so_far()]

    async def check() -> None:
        async with ObjectStore.open(store_url) as store:
            clusters = {r.key for r in await store.list("Cluster")}
            machines = {r.key for r in await store.list("Machine")}
        for i in acknowledged:
            assert f"c{i}" in clusters
        # All or nothing: no cluster without all its machines, no machine without its cluster.
        expected = {f"{c}/m{m}" for c in clusters for m in range(MACHINES_PER_CLUSTER)}
        assert machines == expected

    run(check())
    if store_url.startswith("sqlite"):
        database = store_url.removeprefix("sqlite:///")
        with contextlib.closing(sqlite3.connect(database)) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


@pytest.mark.parametrize("direction", ["peer writes", "peer watches"])
def test_a_write_in_one_process_is_seen_by_a_watch_in_another(store_url, spawn_peer, direction):
    async def watch_here() -> None:
        async with ObjectStore.open(store_url) as store:
            start = await store.current_revision()
            async with contextlib.aclosing(store.watch("Cluster", start)) as events:
                waiting = asyncio.create_task(anext(events))
                writer = spawn_peer(store_url, "write", "Cluster", "from-peer")
                revision = int(await asyncio.to_thread(writer.next_line, 20))
                event = await asyncio.wait_for(waiting, 5)
        assert (event.key, event.revision) == ("from-peer", revision)

    async def write_here() -> None:
        async with ObjectStore.open(store_url) as store:
            await store.create("Cluster", "from-here", b"")

    if direction == "peer writes":
        run(watch_here())
    else:
        watcher = spawn_peer(store_url, "watch", "Cluster")
        assert watcher.next_line(timeout=20) == "ready"
        run(write_here())
        assert watcher.next_line(timeout=5) == "created from-here"
