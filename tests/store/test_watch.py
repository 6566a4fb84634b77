"""Watches: replay from a revision, follow live writes, resume, and compaction's OUT_OF_RANGE."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import grpc
import pytest

from app.store import Commit, EventType, ObjectStore, OutOfRange, Unavailable
from app.store.watch import REPLAY_BATCH, head_revision, read_events
from tests.harness import eventually
from tests.store.conftest import run

T = TypeVar("T")


async def take(events: AsyncIterator[T], count: int) -> list[T]:
    """The next ``count`` events (or commits)."""
    return [await anext(events) for _ in range(count)]


def count_reads(store: ObjectStore, only: Callable[..., Any] | None = None) -> Callable[[], int]:
    """How many database reads (of ``only``, if given) the store makes from now on (observed:
    each still runs)."""
    count = 0
    real_read = store.database.read

    async def counting_read(fn: Callable[..., Any], *args: Any) -> Any:
        nonlocal count
        count += only is None or fn is only
        return await real_read(fn, *args)

    store.database.read = counting_read  # type: ignore[method-assign]
    return lambda: count


def count_head_reads(store: ObjectStore) -> Callable[[], int]:
    """How many times the store's revision poller reads the log's head from now on (each
    still runs)."""
    count = 0
    feed = store._feed
    real_read_head = feed.read_head

    async def counting() -> int:
        nonlocal count
        count += 1
        return await real_read_head()

    feed.read_head = counting
    return lambda: count


def test_the_head_is_the_newest_revision_also_once_compaction_emptied_the_log(with_store):
    async def body(store: ObjectStore):
        assert await store.current_revision() == 0
        await store.create("Cluster", "alpha", b"")
        last = await store.update("Cluster", "alpha", b"v2")
        assert await store.current_revision() == last.revision
        await store.compact(now=datetime.now(UTC) + timedelta(days=365))
        assert await store.event_log_size() == (0, last.revision)
        assert await store.current_revision() == last.revision
        assert await store.database.read(head_revision) == last.revision

    with_store(body)


async def _watching() -> bool:
    """Whether a watch waits for the next revision: it starts the revision poller as it does."""
    return any(task.get_name() == "store-revision-poller" for task in asyncio.all_tasks())


async def _polled(polls: Callable[[], int]) -> bool:
    """Whether the store polled the log's head: only a waiting watch makes it poll."""
    return polls() > 0


def test_replay_gives_every_write_in_order_with_its_type(with_store):
    async def body(store: ObjectStore):
        created = await store.create("Cluster", "alpha", b"v1")
        updated = await store.update("Cluster", "alpha", b"v2")
        deleted = await store.delete("Cluster", "alpha")

        async with contextlib.aclosing(store.watch("Cluster", 0)) as events:
            replayed = await take(events, 3)
        assert [(e.type, e.key, e.data) for e in replayed] == [
            (EventType.CREATED, "alpha", b"v1"),
            (EventType.UPDATED, "alpha", b"v2"),
            (EventType.DELETED, "alpha", b"v2"),  # a deletion carries the last data
        ]
        assert [e.revision for e in replayed] == [
            created.revision,
            updated.revision,
            deleted.revision,
        ]

    with_store(body)


def test_watch_only_sees_the_kinds_it_asked_for(with_store):
    async def body(store: ObjectStore):
        await store.create("Cluster", "alpha", b"")
        await store.create("Machine", "alpha/m0", b"")
        await store.create("Kubeconfig", "alpha", b"")
        await store.create("Machine", "alpha/m1", b"")

        async with contextlib.aclosing(store.watch(["Machine", "Kubeconfig"], 0)) as events:
            assert [(e.kind, e.key) for e in await take(events, 3)] == [
                ("Machine", "alpha/m0"),
                ("Kubeconfig", "alpha"),
                ("Machine", "alpha/m1"),
            ]
        async with contextlib.aclosing(store.watch(None, 0)) as everything:
            assert len(await take(everything, 4)) == 4

    with_store(body)


def test_a_watcher_wakes_at_once_for_a_write_in_its_process(with_store):
    async def body(store: ObjectStore):
        start = await store.current_revision()
        async with contextlib.aclosing(store.watch("Cluster", start)) as events:
            waiting = asyncio.create_task(anext(events))
            await eventually(_watching, what="the watch waiting")
            assert not waiting.done()
            began = time.monotonic()
            written = await store.create("Cluster", "alpha", b"")
            event = await waiting
            # Far below the poll interval used for other processes' writes.
            assert time.monotonic() - began < 0.2
        assert (event.revision, event.type, event.key) == (
            written.revision,
            EventType.CREATED,
            "alpha",
        )

    with_store(body, poll_interval=5.0)


def test_a_watcher_sees_writes_of_another_process_within_a_second(store_url):
    async def body() -> None:
        async with (
            ObjectStore.open(store_url) as watcher_side,
            ObjectStore.open(store_url) as writer_side,
        ):
            start = await watcher_side.current_revision()
            polls = count_head_reads(watcher_side)
            async with contextlib.aclosing(watcher_side.watch("Cluster", start)) as events:
                waiting = asyncio.create_task(anext(events))
                await eventually(lambda: _polled(polls), what="the watch waiting (polling)")
                began = time.monotonic()
                await writer_side.create("Cluster", "alpha", b"")
                event = await asyncio.wait_for(waiting, 5)
                assert time.monotonic() - began < 1.0
            assert event.key == "alpha"

    run(body())


def test_a_watcher_resumes_after_the_last_revision_it_saw(with_store):
    async def body(store: ObjectStore):
        for name in ("a", "b", "c"):
            await store.create("Cluster", name, b"")
        async with contextlib.aclosing(store.watch("Cluster", 0)) as events:
            seen = await take(events, 2)
        # Disconnected; meanwhile more writes happen.
        await store.create("Cluster", "d", b"")
        async with contextlib.aclosing(store.watch("Cluster", seen[-1].revision)) as events:
            assert [e.key for e in await take(events, 2)] == ["c", "d"]

    with_store(body)


def test_a_watcher_far_behind_gets_every_event(with_store):
    async def body(store: ObjectStore):
        total = REPLAY_BATCH * 2 + 7
        async with store.transaction() as tx:
            for i in range(total):
                await tx.create("Machine", f"m{i:05d}", b"")
                if i % 10 == 0:
                    await tx.create("Other", f"o{i:05d}", b"")  # interleaved, filtered out
        async with contextlib.aclosing(store.watch("Machine", 0)) as events:
            keys = [e.key for e in await take(events, total)]
        assert keys == [f"m{i:05d}" for i in range(total)]

    with_store(body)


def _keys(commits: list[Commit]) -> list[list[str]]:
    return [[event.key for event in commit.events] for commit in commits]


def test_a_watch_of_commits_gives_each_transactions_writes_together(store_url):
    """Live (as this process wrote them) and read back from the log by another opening, the
    same commits: every watcher splits the log alike, whatever its reads."""

    async def body() -> None:
        async with ObjectStore.open(store_url) as store:
            head = await store.current_revision()
            commits = store.watch_commits("Cluster", head)
            waiting = asyncio.ensure_future(take(commits, 3))
            await store.create("Cluster", "a", b"")
            async with store.transaction() as tx:
                await tx.update("Cluster", "a", b"changed")
                await tx.create("Machine", "a/0", b"")  # another kind: not in the commit
                await tx.create("Cluster", "b", b"")
                await tx.create("Cluster", "c", b"")
            await store.create("Cluster", "d", b"")
            live = await asyncio.wait_for(waiting, 5)
            await commits.aclose()
        assert _keys(live) == [["a"], ["a", "b", "c"], ["d"]]
        assert [c.revision for c in live] == [c.events[-1].revision for c in live]
        async with (
            ObjectStore.open(store_url) as reopened,
            contextlib.aclosing(reopened.watch_commits("Cluster", head)) as read_back,
        ):
            assert await take(read_back, 3) == live

    run(body())


def test_a_transaction_cut_by_a_page_of_the_log_is_one_commit(store_url):
    async def body() -> None:
        async with ObjectStore.open(store_url) as store:
            for name in ("x", "y"):
                await store.create("Machine", name, b"")
            total = REPLAY_BATCH + 7  # the first page of the log ends inside it
            async with store.transaction() as tx:
                for i in range(total):
                    await tx.create("Machine", f"m{i:05d}", b"")
            await store.create("Machine", "z", b"")
        # Opened again, the store remembers none of it: the watch reads the log page by page.
        async with (
            ObjectStore.open(store_url) as reopened,
            contextlib.aclosing(reopened.watch_commits("Machine", 0)) as commits,
        ):
            got = await take(commits, 4)
        assert [len(c.events) for c in got] == [1, 1, total, 1]

    run(body())


def test_a_watch_from_before_compaction_is_out_of_range(with_store):
    async def body(store: ObjectStore):
        await store.create("Cluster", "old", b"")
        await store.update("Cluster", "old", b"changed")
        compacted = await store.compact()
        assert compacted == await store.current_revision()
        after = await store.create("Cluster", "new", b"")
        assert after.revision > compacted  # revisions are never reused

        with pytest.raises(OutOfRange) as caught:
            await anext(store.watch("Cluster", 0))
        assert caught.value.code is grpc.StatusCode.OUT_OF_RANGE
        assert caught.value.compacted_revision == compacted

        async with contextlib.aclosing(store.watch("Cluster", compacted)) as events:
            assert (await anext(events)).key == "new"

    with_store(body, compaction_age=timedelta(0))


def test_changes_since_a_revision_are_read_without_waiting_and_out_of_range_once_compacted(
    with_store,
):
    async def body(store: ObjectStore):
        start = await store.current_revision()
        for i in range(REPLAY_BATCH + 2):  # more than one read of the log
            await store.create("Cluster", f"c{i}", b"")
        await store.create("Other", "x", b"")
        events, through = await store.changes(["Cluster"], start)
        assert [e.key for e in events] == [f"c{i}" for i in range(REPLAY_BATCH + 2)]
        assert through == await store.current_revision()
        assert await store.changes(["Cluster"], through) == ([], through)
        await store.compact()
        with pytest.raises(OutOfRange):
            await store.changes(["Cluster"], start)

    with_store(body, compaction_age=timedelta(0))


def test_compaction_keeps_events_younger_than_the_age(with_store):
    async def body(store: ObjectStore):
        await store.create("Cluster", "alpha", b"")
        assert await store.compact() == 0
        async with contextlib.aclosing(store.watch("Cluster", 0)) as events:
            assert (await anext(events)).key == "alpha"

    with_store(body, compaction_age=timedelta(hours=1))


def test_the_revision_survives_compacting_the_whole_log_and_a_restart(store_url):
    async def body() -> None:
        async with ObjectStore.open(store_url, compaction_age=timedelta(0)) as store:
            last = await store.create("Cluster", "alpha", b"")
            await store.compact()
        async with ObjectStore.open(store_url) as store:
            assert await store.current_revision() == last.revision
            assert (await store.create("Cluster", "beta", b"")).revision > last.revision

    run(body())


def test_closing_the_store_ends_waiting_watches_as_unavailable(store_url):
    async def body() -> None:
        store = ObjectStore.open(store_url)
        try:
            head = await store.current_revision()
            polls = count_head_reads(store)
            events = store.watch("Cluster", head)
            waiting = asyncio.create_task(anext(events))
            await eventually(lambda: _polled(polls), what="the watch waiting (polling)")
        finally:
            await store.close()
        with pytest.raises(Unavailable) as caught:
            await waiting
        assert caught.value.code is grpc.StatusCode.UNAVAILABLE
        with pytest.raises(Unavailable):
            await store.get("Cluster", "alpha")

    run(body())


def test_many_watchers_of_one_change_cost_one_log_read(with_store):
    async def body(store: ObjectStore):
        head = await store.current_revision()
        watches = [store.watch("Cluster", head) for _ in range(200)]
        firsts = [asyncio.ensure_future(anext(w)) for w in watches]
        await eventually(_watching, what="the watches waiting")
        reads = count_reads(store)
        await store.create("Cluster", "shared", b"")
        received = await asyncio.gather(*firsts)
        assert {e.key for e in received} == {"shared"}
        assert reads() <= 2  # the shared tail's read (and at most one poll), not one per watcher
        for watch in watches:
            await watch.aclose()

    with_store(body)


def test_a_watcher_behind_the_remembered_events_reads_the_log(with_store):
    async def body(store: ObjectStore):
        for i in range(5):
            await store.create("Cluster", f"c{i}", b"")
        async with contextlib.aclosing(store.watch("Cluster", 0)) as events:
            assert [e.key for e in await take(events, 5)] == [f"c{i}" for i in range(5)]

    with_store(body)


def test_watchers_get_this_processs_writes_without_a_log_read_exactly_as_logged(store_url):
    async def body() -> None:
        async with ObjectStore.open(store_url) as store:
            head = await store.current_revision()
            watch = store.watch(None, head)
            waiting = asyncio.ensure_future(take(watch, 5))
            await eventually(_watching, what="the watch waiting")
            reads = count_reads(store, read_events)
            await store.create("Cluster", "alpha", b"v1")
            async with store.transaction() as tx:
                await tx.update("Cluster", "alpha", b"v2")
                await tx.create("Machine", "alpha/m0", b"m")
                await tx.delete("Machine", "alpha/m0")
            await store.update("Cluster", "alpha", b"v3")
            live = await asyncio.wait_for(waiting, 5)
            await watch.aclose()
            assert reads() == 0  # the events came as written, not read back from the log
        async with (
            ObjectStore.open(store_url) as reopened,
            contextlib.aclosing(reopened.watch(None, head)) as events,
        ):
            assert await take(events, 5) == live

    run(body())


def test_writes_of_two_processes_interleaved_reach_a_watcher_in_order(store_url):
    async def body() -> None:
        async with ObjectStore.open(store_url) as here, ObjectStore.open(store_url) as there:
            head = await here.current_revision()
            polls = count_head_reads(here)
            async with contextlib.aclosing(here.watch("Cluster", head)) as events:
                waiting = asyncio.ensure_future(take(events, 4))
                await eventually(lambda: _polled(polls), what="the watch waiting (polling)")
                await here.create("Cluster", "a", b"")
                await there.create("Cluster", "b", b"")  # not known here until read or polled
                await here.create("Cluster", "c", b"")
                await there.create("Cluster", "d", b"")
                received = await asyncio.wait_for(waiting, 5)
            assert [e.key for e in received] == ["a", "b", "c", "d"]
            revisions = [e.revision for e in received]
            assert revisions == sorted(revisions)

    run(body())


def test_objects_as_they_stood_at_a_revision(with_store):
    async def body(store: ObjectStore):
        await store.create("Cluster", "kept", b"k1")
        await store.create("Cluster", "changed", b"c1")
        await store.update("Cluster", "changed", b"c2")
        await store.create("Cluster", "dropped", b"d1")
        await store.create("Node", "other", b"n1")
        then = await store.current_revision()
        await store.update("Cluster", "changed", b"c3")
        await store.delete("Cluster", "dropped")
        await store.create("Cluster", "born", b"b1")
        await store.update("Cluster", "born", b"b2")
        assert sorted(await store.list_at("Cluster", then)) == [b"c2", b"d1", b"k1"]
        assert sorted(await store.list_at("Cluster", await store.current_revision())) == [
            b"b2",
            b"c3",
            b"k1",
        ]

    with_store(body)


def test_objects_at_a_revision_the_log_no_longer_explains_are_out_of_range(with_store):
    async def body(store: ObjectStore):
        await store.create("Cluster", "old", b"o1")
        then = await store.current_revision()
        await store.create("Cluster", "unchanged", b"u1")
        compacted = await store.compact()
        await store.update("Cluster", "old", b"o2")
        # Compacted through a later revision: "old"'s write before ``then`` is gone.
        with pytest.raises(OutOfRange):
            await store.list_at("Cluster", then)
        with pytest.raises(OutOfRange):
            await store.list_at("Cluster", compacted - 1)
        now = await store.current_revision()
        assert sorted(await store.list_at("Cluster", now)) == [b"o2", b"u1"]

    with_store(body, compaction_age=timedelta(0))
