"""ObjectStore: objects, revisions, optimistic concurrency and transactions, on both backends."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC

import grpc
import psycopg
import pytest
from google.protobuf import timestamp_pb2
from sqlalchemy import text

from app.store import (
    SCHEMA_VERSION,
    AlreadyExists,
    Conflict,
    NotFound,
    ObjectStore,
    SchemaTooNew,
    Unavailable,
)
from app.store.database import advisory_lock_key
from tests.store.conftest import run


def test_created_object_can_be_read_back(with_store):
    async def body(store: ObjectStore):
        created = await store.create("Cluster", "alpha", b"\x08\x01")
        assert created.revision > 0
        assert created.created_at.tzinfo is UTC
        got = await store.get("Cluster", "alpha")
        assert got == created  # the same instants, in UTC, read by a point read and a list
        assert got is not None and got.updated_at.tzinfo is UTC
        assert await store.list("Cluster") == [created]
        assert await store.get("Cluster", "beta") is None
        assert await store.get("Machine", "alpha") is None

    with_store(body)


def test_protobuf_messages_are_stored_as_their_bytes(with_store):
    async def body(store: ObjectStore):
        message = timestamp_pb2.Timestamp(seconds=1700000000, nanos=5)
        await store.create("Timestamp", "t", message)
        got = await store.get("Timestamp", "t")
        assert got is not None
        assert got.data == message.SerializeToString()
        assert got.parse(timestamp_pb2.Timestamp) == message

    with_store(body)


def test_creating_an_existing_key_is_already_exists(with_store):
    async def body(store: ObjectStore):
        await store.create("Cluster", "alpha", b"first")
        with pytest.raises(AlreadyExists) as caught:
            await store.create("Cluster", "alpha", b"second")
        assert caught.value.code is grpc.StatusCode.ALREADY_EXISTS
        assert "alpha" in str(caught.value)
        assert (await store.get("Cluster", "alpha")).data == b"first"
        # The same key under another kind is another object.
        await store.create("Machine", "alpha", b"machine")

    with_store(body)


def test_update_bumps_the_revision_and_checks_the_expected_one(with_store):
    async def body(store: ObjectStore):
        first = await store.create("Cluster", "alpha", b"v1")
        second = await store.update("Cluster", "alpha", b"v2", expected_revision=first.revision)
        assert second.revision > first.revision
        assert second.created_at == first.created_at
        assert second.updated_at >= first.updated_at

        with pytest.raises(Conflict) as caught:
            await store.update("Cluster", "alpha", b"v3", expected_revision=first.revision)
        assert caught.value.code is grpc.StatusCode.ABORTED
        assert caught.value.actual_revision == second.revision
        assert (await store.get("Cluster", "alpha")).data == b"v2"

        third = await store.update("Cluster", "alpha", b"v3")  # no expectation: last write wins
        assert third.revision > second.revision

    with_store(body)


def test_an_update_that_changes_nothing_keeps_the_revision(with_store):
    async def body(store: ObjectStore):
        created = await store.create("Cluster", "alpha", b"same")
        before = await store.current_revision()
        unchanged = await store.update("Cluster", "alpha", b"same")
        assert unchanged.revision == created.revision
        assert await store.current_revision() == before

    with_store(body)


def test_update_and_delete_of_a_missing_object_are_not_found(with_store):
    async def body(store: ObjectStore):
        with pytest.raises(NotFound) as caught:
            await store.update("Cluster", "ghost", b"x")
        assert caught.value.code is grpc.StatusCode.NOT_FOUND
        with pytest.raises(NotFound):
            await store.delete("Cluster", "ghost")
        with pytest.raises(NotFound):
            await store.update("Cluster", "ghost", b"x", expected_revision=1)

    with_store(body)


def test_delete_removes_the_object_and_a_new_one_gets_a_new_revision(with_store):
    async def body(store: ObjectStore):
        created = await store.create("Cluster", "alpha", b"old")
        with pytest.raises(Conflict):
            await store.delete("Cluster", "alpha", expected_revision=created.revision + 100)
        deleted = await store.delete("Cluster", "alpha", expected_revision=created.revision)
        assert deleted.data == b"old"
        assert deleted.revision > created.revision
        assert await store.get("Cluster", "alpha") is None

        again = await store.create("Cluster", "alpha", b"new")
        assert again.revision > deleted.revision
        # A writer still holding the first incarnation's revision cannot clobber the new one.
        with pytest.raises(Conflict):
            await store.update("Cluster", "alpha", b"stale", expected_revision=created.revision)

    with_store(body)


def test_list_is_ordered_by_key_and_filters_by_kind_and_prefix(with_store):
    async def body(store: ObjectStore):
        keys = ["b", "a/2", "a/10", "a-1", "ab", "A", "a/é", "a/z"]
        for key in keys:
            await store.create("Machine", key, key.encode())
        await store.create("Cluster", "a/1", b"other kind")

        every = [r.key for r in await store.list("Machine")]
        assert every == sorted(keys)  # code point order on both backends
        assert [r.key for r in await store.list("Machine", "a/")] == ["a/10", "a/2", "a/z", "a/é"]
        assert [r.key for r in await store.list("Machine", "a")] == [
            "a-1",
            "a/10",
            "a/2",
            "a/z",
            "a/é",
            "ab",
        ]
        assert await store.list("Machine", "zzz") == []
        assert await store.list("Nothing") == []

    with_store(body)


def test_a_transaction_commits_every_write_together(with_store):
    async def body(store: ObjectStore):
        async with store.transaction() as tx:
            cluster = await tx.create("Cluster", "alpha", b"cluster")
            machines = [await tx.create("Machine", f"alpha/m{i}", b"machine") for i in range(3)]
            # The transaction sees its own writes.
            assert await tx.get("Cluster", "alpha") == cluster
            assert len(await tx.list("Machine", "alpha/")) == 3
        assert await store.get("Cluster", "alpha") == cluster
        assert await store.list("Machine", "alpha/") == machines
        assert await store.current_revision() == machines[-1].revision

    with_store(body)


def test_a_failed_transaction_leaves_nothing_behind(with_store):
    async def body(store: ObjectStore):
        await store.create("Cluster", "alpha", b"v1")
        before = await store.current_revision()

        class Boom(Exception):
            pass

        with pytest.raises(Boom):
            async with store.transaction() as tx:
                await tx.update("Cluster", "alpha", b"v2")
                await tx.create("Machine", "alpha/m0", b"machine")
                raise Boom

        with pytest.raises(AlreadyExists):
            async with store.transaction() as tx:
                await tx.create("Machine", "alpha/m1", b"machine")
                await tx.create("Cluster", "alpha", b"duplicate")

        assert (await store.get("Cluster", "alpha")).data == b"v1"
        assert await store.list("Machine") == []
        assert await store.current_revision() == before
        # The store is still usable after both rollbacks.
        await store.create("Machine", "alpha/m0", b"machine")

    with_store(body)


def test_counters_change_in_transactions_and_write_no_event(with_store):
    async def body(store: ObjectStore):
        before = await store.current_revision()
        async with store.transaction() as tx:
            assert await tx.counter("test.total") is None
            assert await tx.add_to_counter("test.total", 3) is None  # never set: nothing added
            assert await tx.counter("test.total") is None
            await tx.set_counter("test.total", 10)
            assert await tx.add_to_counter("test.total", -4) == 6

        class Boom(Exception):
            pass

        with pytest.raises(Boom):
            async with store.transaction() as tx:
                assert await tx.add_to_counter("test.total", 100) == 106
                raise Boom
        async with store.transaction() as tx:
            assert await tx.counter("test.total") == 6  # the failed transaction's change undone
            assert await tx.counter("test.other") is None
            await tx.set_counter("test.total", 42)  # set again: the value replaced
        async with store.transaction() as tx:
            assert await tx.counter("test.total") == 42
        assert await store.current_revision() == before  # bookkeeping, not in the event log

    with_store(body)


def test_a_cancelled_transaction_is_rolled_back(with_store):
    async def body(store: ObjectStore):
        started = asyncio.Event()

        async def provision() -> None:
            async with store.transaction() as tx:
                await tx.create("Cluster", "alpha", b"cluster")
                started.set()
                await asyncio.sleep(60)

        task = asyncio.create_task(provision())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await store.get("Cluster", "alpha") is None
        await store.create("Cluster", "alpha", b"cluster")

    with_store(body)


def test_concurrent_read_modify_write_updates_lose_nothing(with_store):
    async def body(store: ObjectStore):
        await store.create("Counter", "hits", b"0")
        conflicts = 0

        async def increment() -> None:
            nonlocal conflicts
            while True:
                current = await store.get("Counter", "hits")
                await asyncio.sleep(0)  # let the others read the same revision
                value = int(current.data) + 1
                try:
                    await store.update(
                        "Counter", "hits", str(value).encode(), expected_revision=current.revision
                    )
                    return
                except Conflict:
                    conflicts += 1

        await asyncio.gather(*(increment() for _ in range(20)))
        assert (await store.get("Counter", "hits")).data == b"20"
        assert conflicts > 0  # the race really happened

    with_store(body)


def test_concurrent_creates_of_one_key_let_exactly_one_win(with_store):
    async def body(store: ObjectStore):
        async def create(i: int) -> bool:
            try:
                await store.create("Cluster", "alpha", str(i).encode())
            except AlreadyExists:
                return False
            return True

        results = await asyncio.gather(*(create(i) for i in range(10)))
        assert results.count(True) == 1

    with_store(body)


def test_objects_survive_a_restart_and_the_schema_version_is_recorded(store_url):
    async def first() -> int:
        async with ObjectStore.open(store_url) as store:
            return (await store.create("Cluster", "alpha", b"kept")).revision

    async def second(revision: int) -> None:
        async with ObjectStore.open(store_url) as store:
            assert (await store.get("Cluster", "alpha")).revision == revision
            assert (await store.create("Cluster", "beta", b"new")).revision > revision
            with store.database.engine.connect() as conn:
                versions = conn.execute(text("SELECT version FROM schema_version")).scalars()
                assert list(versions) == list(range(1, SCHEMA_VERSION + 1))

    run(second(run(first())))


def test_a_version_1_database_gains_the_account_organisations(store_url):
    async def make_version_1() -> None:
        async with ObjectStore.open(store_url) as store:
            await store.accounts.create("alice", "h", "operator")
            with store.database.engine.begin() as conn:
                for column in ("developer", "operator"):
                    conn.execute(text(f"ALTER TABLE account DROP COLUMN {column}"))
                conn.execute(text("DELETE FROM schema_version WHERE version > 1"))

    async def reopen() -> None:
        async with ObjectStore.open(store_url) as store:
            assert (await store.accounts.get("alice")).developer == ""
            await store.accounts.create("bob", "h", "operator", developer="AcmeApps")
            assert (await store.accounts.get("bob")).developer == "AcmeApps"

    run(make_version_1())
    run(reopen())


def test_a_database_from_a_newer_portico_is_refused(store_url):
    async def mark_newer() -> None:
        async with ObjectStore.open(store_url) as store:
            with store.database.engine.connect() as conn:
                conn.execute(
                    text("INSERT INTO schema_version (version, applied_at) VALUES (:v, :at)"),
                    {"v": SCHEMA_VERSION + 1, "at": "2030-01-01 00:00:00"},
                )

    run(mark_newer())
    with pytest.raises(SchemaTooNew, match="newer than this Portico"):
        ObjectStore.open(store_url)


@contextlib.contextmanager
def another_process_writing(store: ObjectStore) -> Iterator[None]:
    """Hold the database's write lock from another connection, as a busy writer would."""
    url = store.database.engine.url
    if store.is_sqlite:
        with contextlib.closing(sqlite3.connect(url.database, isolation_level=None)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            yield
        return
    key = advisory_lock_key("portico.store.write", store.database.namespace)
    libpq_url = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(libpq_url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        yield


def test_a_busy_database_is_unavailable_with_a_retry_hint(with_store):
    async def body(store: ObjectStore):
        await store.create("Cluster", "alpha", b"v1")
        with another_process_writing(store):
            began = time.monotonic()
            with pytest.raises(Unavailable) as caught:
                await store.update("Cluster", "alpha", b"v2")
            assert time.monotonic() - began < 2  # gave up after the busy timeout
            assert caught.value.code is grpc.StatusCode.UNAVAILABLE
            assert caught.value.retry_after > 0
            with pytest.raises(Unavailable):
                async with store.transaction():
                    pass
            # Readers are not blocked by a writer.
            assert (await store.get("Cluster", "alpha")).data == b"v1"
            assert len(await store.list("Cluster")) == 1
        assert (await store.update("Cluster", "alpha", b"v2")).data == b"v2"

    with_store(body, busy_timeout=0.2)


def test_sqlite_writers_of_several_processes_take_turns(sqlite_url):
    """Worker processes sharing one SQLite file queue on a lock beside it: a writer gets in as
    soon as the other process is done, and gives up (UNAVAILABLE) after the busy timeout."""

    async def body() -> None:
        async with ObjectStore.open(sqlite_url, busy_timeout=0.3) as store:
            await store.create("Cluster", "alpha", b"v1")
            fd = os.open(f"{store.database.engine.url.database}.write-lock", os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # another process's turn
                asyncio.get_running_loop().call_later(0.1, fcntl.flock, fd, fcntl.LOCK_UN)
                began = time.monotonic()
                assert (await store.update("Cluster", "alpha", b"v2")).data == b"v2"
                assert 0.09 <= time.monotonic() - began < 0.3
                fcntl.flock(fd, fcntl.LOCK_EX)
                with pytest.raises(Unavailable):
                    await store.update("Cluster", "alpha", b"v3")
            finally:
                os.close(fd)
            assert (await store.update("Cluster", "alpha", b"v3")).data == b"v3"

    run(body())


def test_sqlite_runs_in_wal_mode_with_durable_commits(sqlite_url):
    async def body() -> None:
        async with ObjectStore.open(sqlite_url) as store:
            with store.database.engine.connect() as conn:
                pragma = conn.exec_driver_sql
                assert pragma("PRAGMA journal_mode").scalar() == "wal"
                assert pragma("PRAGMA foreign_keys").scalar() == 1
                assert pragma("PRAGMA synchronous").scalar() == 2  # FULL
                assert pragma("PRAGMA busy_timeout").scalar() > 0

    run(body())


def test_an_unreachable_postgresql_is_unavailable():
    with pytest.raises(Unavailable):
        ObjectStore.open("postgresql://portico:portico@127.0.0.1:1/portico", busy_timeout=1)
