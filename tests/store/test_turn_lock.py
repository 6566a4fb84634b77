"""The write lock's queue: callers' writes go before background work's, which still gets every
BACKGROUND_EVERY-th turn while both wait, and a waiter that gives up never stalls the queue."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from app.store import ObjectStore, mark_background
from app.store.turn_lock import BACKGROUND_EVERY, TurnLock
from tests.store.conftest import run


async def _queued(
    take: Callable[[str], Awaitable[None]], names: list[str], background: set[str]
) -> list[asyncio.Task[None]]:
    """A task per name, queued in this order (those in ``background`` marked as such)."""

    async def one(name: str) -> None:
        if name in background:
            mark_background()
        await take(name)

    tasks = []
    for name in names:
        tasks.append(asyncio.create_task(one(name)))
        await asyncio.sleep(0)  # queued before the next one
    return tasks


def _order_of_turns(names: list[str], background: set[str]) -> list[str]:
    """The order in which waiters queued in ``names`` order get a lock held meanwhile."""

    async def main() -> list[str]:
        lock = TurnLock()
        await lock.acquire()
        order: list[str] = []

        async def take(name: str) -> None:
            await lock.acquire()
            order.append(name)
            lock.release()

        tasks = await _queued(take, names, background)
        lock.release()
        await asyncio.gather(*tasks)
        assert not lock.locked()
        return order

    return run(main())


def test_callers_go_before_background_work_that_queued_first():
    order = _order_of_turns(["b1", "b2", "c1", "c2"], background={"b1", "b2"})
    assert order == ["c1", "c2", "b1", "b2"]


def test_background_work_gets_a_turn_in_every_few_while_callers_keep_coming():
    callers = [f"c{i}" for i in range(2 * BACKGROUND_EVERY)]
    order = _order_of_turns(["b1", "b2", *callers], background={"b1", "b2"})
    first = BACKGROUND_EVERY - 1
    assert order == [
        *callers[:first],
        "b1",
        *callers[first : 2 * first],
        "b2",
        *callers[2 * first :],
    ]


@pytest.mark.parametrize("when", ["waiting", "just handed the lock"])
def test_a_waiter_that_gives_up_does_not_stall_the_queue(when):
    async def main() -> None:
        lock = TurnLock()
        await lock.acquire()
        quitter = asyncio.create_task(lock.acquire())
        await asyncio.sleep(0)
        after = asyncio.create_task(lock.acquire())
        await asyncio.sleep(0)
        if when == "waiting":
            quitter.cancel()
            lock.release()
        else:
            lock.release()  # hands the lock to the quitter, which goes before it runs
            quitter.cancel()
        await asyncio.wait_for(after, 5)  # the lock reached the next waiter
        assert quitter.cancelled()
        lock.release()
        assert not lock.locked()

    run(main())


async def _holding_the_write_lock(store: ObjectStore, done: asyncio.Event) -> asyncio.Task[None]:
    """A task in a write transaction until ``done`` is set; returns once it holds the lock."""
    holding = asyncio.Event()

    async def hold() -> None:
        async with store.transaction():
            holding.set()
            await done.wait()

    holder = asyncio.create_task(hold())
    await holding.wait()
    return holder


def test_a_callers_write_does_not_queue_behind_background_writes(with_store):
    async def body(store: ObjectStore) -> None:
        order: list[str] = []

        async def write(name: str) -> None:
            async with store.transaction() as tx:
                order.append(name)
                await tx.create("Cluster", name, b"")

        done = asyncio.Event()
        holder = await _holding_the_write_lock(store, done)
        background = {f"reconciler-{i}" for i in range(5)}
        tasks = await _queued(write, [*sorted(background), "caller"], background)
        done.set()
        await asyncio.gather(holder, *tasks)
        assert order == ["caller", *sorted(background)]

    with_store(body)


def test_the_store_says_when_a_callers_write_waits_for_its_turn(with_store):
    """What background work gives way to: a caller's write queued, not background work's."""

    async def body(store: ObjectStore) -> None:
        async def write(name: str) -> None:
            async with store.transaction() as tx:
                await tx.create("Cluster", name, b"")

        done = asyncio.Event()
        holder = await _holding_the_write_lock(store, done)
        assert not store.database.callers_waiting  # one writing, nobody queued
        [background] = await _queued(write, ["reconciler"], {"reconciler"})
        assert not store.database.callers_waiting
        [caller] = await _queued(write, ["caller"], set())
        assert store.database.callers_waiting
        done.set()
        await asyncio.gather(holder, background, caller)
        assert not store.database.callers_waiting

    with_store(body)


def test_closing_lets_background_writes_queued_before_it_take_their_turns(with_store):
    """The close waits for the writers queued before it in the callers' lane, which goes first:
    it overtook queued background writes, found them still waiting and closed under them, so
    they met a closed store (a thread pool shut down) in the middle of their turns."""

    async def body(store: ObjectStore) -> None:
        async def write(name: str) -> None:
            async with store.transaction() as tx:
                await tx.create("Cluster", name, b"")

        done = asyncio.Event()
        holder = await _holding_the_write_lock(store, done)
        names = [f"reconciler-{i}" for i in range(5)]
        tasks = await _queued(write, names, set(names))
        closing = asyncio.create_task(store.close())
        await asyncio.sleep(0)  # the close queues behind the turn held, in the callers' lane
        done.set()
        outcomes = await asyncio.gather(holder, *tasks, closing, return_exceptions=True)
        assert outcomes == [None] * (len(names) + 2)

    with_store(body)
