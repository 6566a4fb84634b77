"""Leader election: exactly one leader on PostgreSQL, quick takeover when it dies."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import pytest

from app.server.jobs import run_while_leader
from app.store import LeaderElection, ObjectStore
from tests.harness import eventually
from tests.store.conftest import run

RETRY = 0.2


async def campaign(election: LeaderElection) -> asyncio.Task[None]:
    return asyncio.create_task(election.run())


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _lost(election: LeaderElection, tries: int) -> bool:
    return election.attempts_lost >= tries


async def _others_lost(
    elections: list[LeaderElection], tries: int, since: dict[LeaderElection, int] | None = None
) -> bool:
    """Every election but the leader has lost ``tries`` more tries (since ``since``)."""
    since = since or {}
    others = [e for e in elections if not e.is_leader]
    return all(e.attempts_lost - since.get(e, 0) >= tries for e in others)


def test_on_sqlite_the_process_is_leader_at_once(sqlite_url):
    async def body() -> None:
        async with ObjectStore.open(sqlite_url) as store:
            changes: list[str] = []
            election = LeaderElection(
                store,
                on_elected=lambda: changes.append("elected"),
                on_deposed=lambda: changes.append("deposed"),
            )
            task = await campaign(election)
            await asyncio.wait_for(election.wait_elected(), 1)
            assert election.is_leader
            await stop(task)
            assert not election.is_leader
            assert changes == ["elected", "deposed"]

    run(body())


def test_workers_on_one_sqlite_file_elect_one_leader_and_a_successor(sqlite_url):
    async def body() -> None:
        async with ObjectStore.open(sqlite_url) as one, ObjectStore.open(sqlite_url) as two:
            first, second = (LeaderElection(s, retry_interval=0.05) for s in (one, two))
            first_task = await campaign(first)
            await asyncio.wait_for(first.wait_elected(), 1)
            second_task = await campaign(second)
            await eventually(lambda: _lost(second, 3), what="three tries of the second lost")
            assert first.is_leader and not second.is_leader
            await stop(first_task)
            await asyncio.wait_for(second.wait_elected(), 1)
            await stop(second_task)

    run(body())


@pytest.mark.postgres
def test_one_leader_among_many_and_a_successor_when_it_stops(postgres_url):
    async def body() -> None:
        async with (
            ObjectStore.open(postgres_url) as one,
            ObjectStore.open(postgres_url) as two,
            ObjectStore.open(postgres_url) as three,
        ):
            elections = [LeaderElection(s, retry_interval=RETRY) for s in (one, two, three)]
            tasks = {e: await campaign(e) for e in elections}
            await asyncio.wait(
                [asyncio.create_task(e.wait_elected()) for e in elections],
                return_when=asyncio.FIRST_COMPLETED,
            )
            await eventually(
                lambda: _others_lost(elections, 3), what="three lost tries of the rest"
            )
            leaders = [e for e in elections if e.is_leader]
            assert len(leaders) == 1

            await stop(tasks.pop(leaders[0]))  # its lock is released when this returns
            # The takeover is timed from the release: stopping can itself be slow on a busy
            # machine (a query being cancelled, a connection closed), which is not the claim.
            began = time.monotonic()
            await asyncio.wait(
                [asyncio.create_task(e.wait_elected()) for e in tasks],
                return_when=asyncio.FIRST_COMPLETED,
                timeout=5,
            )
            assert time.monotonic() - began < 3
            lost = {e: e.attempts_lost for e in tasks}
            await eventually(
                lambda: _others_lost(list(tasks), 3, since=lost), what="three more lost tries"
            )
            assert sum(e.is_leader for e in tasks) == 1
            for task in tasks.values():
                await stop(task)

    run(body())


@pytest.mark.postgres
def test_killing_the_leader_process_hands_leadership_over(postgres_url, spawn_peer):
    leader = spawn_peer(postgres_url, "lead")
    assert leader.next_line(timeout=20) == "leader"

    async def body() -> None:
        async with ObjectStore.open(postgres_url) as store:
            election = LeaderElection(store, retry_interval=RETRY)
            task = await campaign(election)
            await eventually(lambda: _lost(election, 3), what="three tries lost to the leader")
            assert not election.is_leader

            began = time.monotonic()
            leader.kill()
            await asyncio.wait_for(election.wait_elected(), 10)
            assert time.monotonic() - began < 5
            await stop(task)

    run(body())


def test_a_process_elected_while_shutting_down_starts_no_background_work(sqlite_url):
    """Two workers stopping: the one that outlived the leader won the election and started
    every job, only to cancel them a few milliseconds later."""

    async def body() -> None:
        async with ObjectStore.open(sqlite_url) as store:
            started: list[str] = []

            async def job() -> None:
                started.append("job")
                await asyncio.Event().wait()

            await asyncio.wait_for(run_while_leader(store, [job], lambda: True), 5)
            assert started == []
            # The lock went with it: another process (here, the next election) leads at once.
            election = LeaderElection(store)
            task = await campaign(election)
            await asyncio.wait_for(election.wait_elected(), 1)
            await stop(task)

    run(body())


@pytest.mark.postgres
def test_a_leader_stops_without_waiting_for_its_jobs_statement_on_a_thread(postgres_url):
    """A job cancelled in the middle of a statement on the store's threads (PostgreSQL, where
    a busy server's thread pool has a queue) made the leader's stop wait for that statement,
    and then for the rollback's own turns on the pool: seconds under load. The turn now ends
    by itself (it owns the write lock until it has), and the stop returns at once."""

    async def body() -> float:
        async with ObjectStore.open(postgres_url) as store:
            in_statement = threading.Event()

            def slow(conn: object) -> None:
                in_statement.set()
                conn.exec_driver_sql("SELECT pg_sleep(3)")  # type: ignore[attr-defined]

            async def job() -> None:
                while True:
                    await store.database.write(slow)

            leading = asyncio.create_task(run_while_leader(store, [job]))

            async def started() -> bool:
                return in_statement.is_set()

            await eventually(started, 10, what="the job's statement runs")
            began = time.monotonic()
            leading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await leading
            took = time.monotonic() - began
            # The turn still ends (rolled back) and the store is usable again.
            await asyncio.wait_for(store.create("Cluster", "after", b""), 10)
            return took

    took = run(body())
    assert took < 1, f"the leader took {took:.1f} s to stop"
