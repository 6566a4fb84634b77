"""Failed-login counts in the store: reserved, settled, locked with backoff, on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.store import ObjectStore
from app.store.login_attempts import STRIKE_MEMORY, Limit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LIMIT = Limit(
    max_failures=3,
    window=timedelta(seconds=60),
    lockout=timedelta(seconds=30),
    max_lockout=timedelta(seconds=100),
    forget_on_success=True,
)
ADDRESS = Limit(3, timedelta(seconds=60), timedelta(seconds=30), timedelta(seconds=30), False)


async def _fail(store: ObjectStore, keys, at: float) -> list:
    now = T0 + timedelta(seconds=at)
    refusal = await store.login_attempts.reserve(keys, now)
    if refusal is not None:
        return [refusal]
    return await store.login_attempts.settle(keys, False, now)


def test_lockouts_double_in_a_row_up_to_the_maximum(with_store):
    async def body(store: ObjectStore) -> None:
        keys = (("user:alice@10.0.0.1", LIMIT),)
        assert [await _fail(store, keys, t) for t in (0, 1)] == [[], []]
        (locked,) = await _fail(store, keys, 2)
        assert locked.retry_after == 30
        # Refused while locked, and nothing counted.
        assert (await _fail(store, keys, 10))[0].retry_after == 22
        for start, lockout in ((40, 60), (110, 100), (220, 100)):
            refusals = [await _fail(store, keys, start + t) for t in range(3)]
            assert refusals[-1][0].retry_after == lockout

    with_store(body)


def test_failures_outside_the_window_do_not_count(with_store):
    async def body(store: ObjectStore) -> None:
        keys = (("user:bob@10.0.0.1", LIMIT),)
        assert [await _fail(store, keys, t) for t in (0, 70, 140, 210)] == [[], [], [], []]

    with_store(body)


def test_a_success_forgets_the_user_key_and_refunds_the_address_key(with_store):
    async def body(store: ObjectStore) -> None:
        keys = (("user:carol@10.0.0.1", LIMIT), ("address:10.0.0.1", ADDRESS))
        for t in range(2):
            assert await _fail(store, keys, t) == []
        assert await store.login_attempts.reserve(keys, T0) is None
        assert await store.login_attempts.settle(keys, True, T0) == []
        # The user key starts afresh; the address keeps its two failures and locks at a third.
        other = (("user:dave@10.0.0.1", LIMIT), ("address:10.0.0.1", ADDRESS))
        (locked,) = await _fail(store, other, 3)
        assert locked.key == "address:10.0.0.1"

    with_store(body)


def test_attempts_being_checked_fill_the_budget(with_store):
    async def body(store: ObjectStore) -> None:
        keys = (("user:erin@10.0.0.1", LIMIT),)
        for _ in range(3):
            assert await store.login_attempts.reserve(keys, T0) is None
        refusal = await store.login_attempts.reserve(keys, T0)
        assert refusal is not None and refusal.retry_after == 30

    with_store(body)


def test_stale_records_are_forgotten(with_store):
    async def body(store: ObjectStore) -> None:
        await _fail(store, (("user:old@10.0.0.1", LIMIT),), 0)
        await _fail(store, (("user:new@10.0.0.1", LIMIT),), STRIKE_MEMORY.total_seconds())
        later = T0 + STRIKE_MEMORY + timedelta(seconds=1)
        assert await store.login_attempts.forget_stale(later) == 1

    with_store(body)
