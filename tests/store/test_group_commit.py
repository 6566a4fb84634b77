"""Group commit: concurrent write transactions share database commits, each is still undone
alone if it fails, and watchers see every committed write once, in revision order."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from prometheus_client import REGISTRY

from app.observe.metrics import RECORDING
from app.store import AlreadyExists, ObjectStore
from tests.store.conftest import run

WRITERS = 64


def _commits_and_transactions() -> tuple[float, float]:
    """How many group commits this process made so far, and how many transactions they held."""
    commits = REGISTRY.get_sample_value("portico_store_group_commits_total")
    transactions = REGISTRY.get_sample_value("portico_store_group_committed_transactions_total")
    return commits or 0.0, transactions or 0.0


@pytest.fixture(autouse=True)
def _recording():
    was, RECORDING.on = RECORDING.on, True
    yield
    RECORDING.on = was


def test_concurrent_creates_share_commits_and_all_are_stored(with_store):
    async def body(store: ObjectStore):
        commits, transactions = _commits_and_transactions()
        await asyncio.gather(*(store.create("Cluster", f"c{i}", b"x") for i in range(WRITERS)))
        commits_after, transactions_after = _commits_and_transactions()
        assert transactions_after - transactions == WRITERS
        # All were queued at once: a handful of fsyncs, not one each.
        assert commits_after - commits <= WRITERS / 4
        assert len(await store.list("Cluster")) == WRITERS

    # Only the queue decides here: the age bound (20 ms) closes a group sooner on a machine so
    # busy that 64 turns take longer than that (on PostgreSQL, a thread hop per statement).
    with_store(body, group_max_seconds=60)


def test_with_one_transaction_per_group_each_commits_alone(with_store):
    async def body(store: ObjectStore):
        commits, _ = _commits_and_transactions()
        await asyncio.gather(*(store.create("Cluster", f"c{i}", b"x") for i in range(8)))
        assert _commits_and_transactions()[0] - commits == 8

    with_store(body, group_max_members=1)


def test_a_failing_transaction_leaves_the_others_of_its_group_committed(with_store):
    async def body(store: ObjectStore):
        await store.create("Cluster", "taken", b"t")
        start = await store.current_revision()

        async def fails_after_writing() -> None:
            async with store.transaction() as tx:
                await tx.create("Cluster", "half-done", b"h")
                raise RuntimeError("the caller's own failure")

        commits, transactions = _commits_and_transactions()
        calls = [store.create("Cluster", f"ok{i}", b"o") for i in range(20)]
        calls.insert(5, fails_after_writing())
        calls.insert(12, store.create("Cluster", "taken", b"again"))
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
        assert isinstance(outcomes[5], RuntimeError)
        assert isinstance(outcomes[12], AlreadyExists)
        # They shared commits with the ones that failed, and every other one is there.
        assert _commits_and_transactions()[0] - commits < _commits_and_transactions()[1] - (
            transactions
        )
        keys = {r.key for r in await store.list("Cluster")}
        assert keys == {"taken"} | {f"ok{i}" for i in range(20)}
        assert (await store.get("Cluster", "taken")).data == b"t"  # type: ignore[union-attr]
        # A watcher sees the twenty creates, each once, in revision order, and nothing else.
        async with contextlib.aclosing(store.watch("Cluster", start)) as events:
            seen = [await asyncio.wait_for(anext(events), 5) for _ in range(20)]
        assert sorted(e.key for e in seen) == sorted(f"ok{i}" for i in range(20))
        revisions = [e.revision for e in seen]
        assert revisions == sorted(revisions) and len(set(revisions)) == 20

    with_store(body)


def test_a_live_watch_gets_concurrent_writes_in_revision_order(with_store):
    async def body(store: ObjectStore):
        start = await store.current_revision()
        async with contextlib.aclosing(store.watch("Cluster", start)) as events:
            first = asyncio.ensure_future(anext(events))
            acknowledged = await asyncio.gather(
                *(store.create("Cluster", f"c{i}", b"x") for i in range(WRITERS))
            )
            seen = [await asyncio.wait_for(first, 5)]
            seen += [await asyncio.wait_for(anext(events), 5) for _ in range(WRITERS - 1)]
        assert [e.revision for e in seen] == sorted(r.revision for r in acknowledged)

    with_store(body)


def test_a_caller_that_goes_away_before_its_group_commits_fails_no_other(with_store):
    async def body(store: ObjectStore):
        next_turn = asyncio.Event()

        async def write(key: str, started: asyncio.Event | None = None) -> None:
            async with store.transaction() as tx:
                if started is not None:
                    started.set()
                await tx.create("Cluster", key, b"x")

        first = asyncio.ensure_future(write("early"))
        others = [asyncio.ensure_future(write("second"))]
        others.append(asyncio.ensure_future(write("third", next_turn)))
        others += [asyncio.ensure_future(write(f"c{i}")) for i in range(20)]
        # The third turn has begun: the first's ended two turns ago, and it waits for the
        # group's commit.
        await next_turn.wait()
        first.cancel()
        await asyncio.gather(*others)  # every one acknowledged, none cancelled with it
        with contextlib.suppress(asyncio.CancelledError):
            await first
        # Its write was in the group, and committed with it.
        assert len(await store.list("Cluster")) == 23

    with_store(body, group_max_seconds=1.0)


def test_closing_under_queued_writers_ends_every_turn(store_url, caplog):
    """A store closed while writers queue for their turns (a server stopping under load) lets
    each finish or fail, leaves no transaction open, and loses nothing it acknowledged."""

    async def scenario() -> None:
        async with ObjectStore.open(store_url) as store:
            # Half the writers queue before the close begins, half while it waits for them
            # (gather starts them in this order).
            writes = [store.create("Cluster", f"c{i}", b"x") for i in range(64)]
            outcomes = await asyncio.gather(
                *writes[:32], store.close(), *writes[32:], return_exceptions=True
            )
            assert outcomes.pop(32) is None  # the close itself
        acknowledged = {
            f"c{i}" for i, outcome in enumerate(outcomes) if not isinstance(outcome, BaseException)
        }
        async with ObjectStore.open(store_url) as again:
            # No transaction of the closed store holds the write lock: this one writes at once.
            await asyncio.wait_for(again.create("Cluster", "after", b"y"), 5)
            stored = {record.key for record in await again.list("Cluster")}
        assert acknowledged <= stored

    run(scenario())
    assert "did not end" not in caplog.text
