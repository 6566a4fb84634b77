"""``ObjectStore.atomically``: every store call of the task joins one transaction (what keyed
calls run in), with its own writes visible inside, nested transactions as savepoints, and
watchers told only once it has committed."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

import pytest

from app.store import AlreadyExists, ObjectStore, StoredOutcome


def test_writes_inside_commit_together_and_are_read_back_inside(with_store):
    async def body(store: ObjectStore):
        async with store.atomically():
            await store.create("Cluster", "alpha", b"a")
            assert (await store.get("Cluster", "alpha")) is not None  # its own write
            async with store.transaction() as tx:  # a savepoint of the same transaction
                await tx.create("Cluster", "beta", b"b")
            await store.idempotency.put(
                "1", "key", StoredOutcome("m", "h", 0, b""), timedelta(minutes=1)
            )
        assert [r.key for r in await store.list("Cluster")] == ["alpha", "beta"]
        assert await store.idempotency.get("1", "key") is not None

    with_store(body)


def test_a_failure_escaping_undoes_every_write_and_tells_no_watcher(with_store):
    async def body(store: ObjectStore):
        start = await store.current_revision()
        with pytest.raises(RuntimeError):
            async with store.atomically():
                await store.create("Cluster", "alpha", b"a")
                await store.idempotency.put(
                    "1", "key", StoredOutcome("m", "h", 0, b""), timedelta(minutes=1)
                )
                raise RuntimeError("the call failed")
        assert await store.list("Cluster") == []
        assert await store.idempotency.get("1", "key") is None
        # The next committed write is the first thing a watcher from before sees.
        async with contextlib.aclosing(store.watch("Cluster", start)) as events:
            await store.create("Cluster", "gamma", b"c")
            event = await asyncio.wait_for(anext(events), 5)
            assert event.key == "gamma"

    with_store(body)


def test_a_failed_nested_write_is_undone_alone(with_store):
    async def body(store: ObjectStore):
        await store.create("Cluster", "taken", b"t")
        async with store.atomically():
            await store.create("Cluster", "alpha", b"a")
            with pytest.raises(AlreadyExists):
                await store.create("Cluster", "taken", b"again")
            with pytest.raises(AlreadyExists):
                async with store.transaction() as tx:
                    await tx.create("Cluster", "beta", b"b")
                    await tx.create("Cluster", "taken", b"again")
        assert [r.key for r in await store.list("Cluster")] == ["alpha", "taken"]
        assert (await store.get("Cluster", "taken")).data == b"t"  # type: ignore[union-attr]

    with_store(body)
