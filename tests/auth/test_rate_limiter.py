"""The rate limiter over the store: two processes' limiters share one bucket, and neither
admits more than the bucket allows, whatever the size of the shares they take."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from app.auth import rate_limit
from app.auth.rate_limit import Limit, RateLimited, RateLimiter
from app.store import ObjectStore, rate_buckets
from app.store.rate_buckets import Grant
from tests.harness import run

METHOD = "pkg.Service.Method"


async def _admitted(limiters: list[RateLimiter], calls: int) -> tuple[int, float]:
    """Calls made in turn through each limiter: how many were admitted, and in how long."""
    admitted = 0
    started = time.monotonic()
    for n in range(calls):
        limiter = limiters[n % len(limiters)]
        if limiter.take_here(METHOD, "account:1"):
            admitted += 1
            continue
        try:
            await limiter.take(METHOD, "account:1")
        except RateLimited:
            continue
        admitted += 1
    return admitted, time.monotonic() - started


@pytest.mark.parametrize(("rate", "burst"), [(5.0, 6), (200.0, 100)])
def test_two_limiters_on_one_store_admit_no_more_than_the_bucket(
    tmp_path: Path, rate: float, burst: int
) -> None:
    url = f"sqlite:///{tmp_path / 'portico.db'}"

    async def scenario() -> None:
        async with ObjectStore.open(url) as one, ObjectStore.open(url) as two:
            limit = Limit(rate, burst)
            limiters = [RateLimiter(s.rate_buckets, limit) for s in (one, two)]
            admitted, took = await _admitted(limiters, 300)
            # The bucket's own allowance, plus the shares the two processes may hold.
            assert admitted <= burst + rate * took + 2 * 2 * limit.share
            # Tokens held in the other process's share are all a caller can miss.
            assert admitted >= burst - 2 * limit.share

    run(scenario())


def test_a_small_rate_is_exact_and_says_when_to_come_back(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ObjectStore.open(f"sqlite:///{tmp_path / 'portico.db'}") as store:
            limiter = RateLimiter(store.rate_buckets, Limit(0.5, 2))
            for _ in range(2):
                await limiter.take(METHOD, "address:203.0.113.9")
            with pytest.raises(RateLimited) as refused:
                await limiter.take(METHOD, "address:203.0.113.9")
            # The bucket gains half a token a second: the next one is two seconds away.
            assert 1.5 < refused.value.retry_after <= 2.0
            # Someone else is not held back.
            await limiter.take(METHOD, "address:203.0.113.10")

    run(scenario())


def test_a_method_limit_of_zero_is_unlimited(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ObjectStore.open(f"sqlite:///{tmp_path / 'portico.db'}") as store:
            limiter = RateLimiter(store.rate_buckets, Limit(0.01, 1), {METHOD: Limit(0, 1)})
            for _ in range(10):
                assert limiter.take_here(METHOD, "account:1")
            await limiter.take("pkg.Service.Other", "account:1")
            with pytest.raises(RateLimited):
                await limiter.take("pkg.Service.Other", "account:1")

    run(scenario())


class Clock:
    """The limiter's and the buckets' time, moved on by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1_000.0
        monkeypatch.setattr(rate_limit, "time", SimpleNamespace(monotonic=lambda: self.now))
        monkeypatch.setattr(rate_buckets, "time", SimpleNamespace(time=lambda: self.now))


async def _call(limiter: RateLimiter) -> bool:
    """One call by account 1: admitted or not; a renewal it started has come in on return."""
    if not limiter.take_here(METHOD, "account:1"):
        try:
            await limiter.take(METHOD, "account:1")
        except RateLimited:
            return False
    for renewal in list(limiter._renewals):
        await renewal
    return True


async def _burst(limiter: RateLimiter) -> int:
    """Calls all at once until one is refused: how many were admitted."""
    admitted = 0
    while await _call(limiter):
        admitted += 1
    return admitted


def test_a_slow_caller_piles_up_no_tokens_for_a_later_burst(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller below its share's pace for half a minute, then all at once: it gets the
    bucket's burst plus at most two shares, not every share's leftover of those 30 s."""
    clock = Clock(monkeypatch)
    limit = Limit(200.0, 200)  # shares of 20

    async def scenario() -> None:
        async with ObjectStore.open(f"sqlite:///{tmp_path / 'portico.db'}") as store:
            limiter = RateLimiter(store.rate_buckets, limit)
            for _ in range(330):  # eleven calls a second
                assert await _call(limiter)
                clock.now += 0.09
            assert await _burst(limiter) <= limit.burst + 2 * limit.share

    run(scenario())


def test_a_slow_caller_costs_a_store_write_per_share_not_per_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(monkeypatch)
    limit = Limit(1000.0, 1000)  # shares of 100, the next taken when 25 are left

    async def scenario() -> None:
        async with ObjectStore.open(f"sqlite:///{tmp_path / 'portico.db'}") as store:
            writes = []
            take = store.rate_buckets.take

            async def counted(*args: Any) -> Grant:
                writes.append(args)
                return await take(*args)

            monkeypatch.setattr(store.rate_buckets, "take", counted)
            limiter = RateLimiter(store.rate_buckets, limit)
            for _ in range(600):  # ten calls a second for a minute
                assert await _call(limiter)
                clock.now += 0.1
            # One write per 75 calls, not one a second.
            assert len(writes) <= 600 // 75 + 1

    run(scenario())


def test_a_caller_back_after_a_pause_finds_the_bucket_and_no_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a process held for a caller who left it alone for a second is dropped: a burst
    after the pause gets the full bucket's burst, not that and the share."""
    clock = Clock(monkeypatch)
    limit = Limit(1000.0, 1000)

    async def scenario() -> None:
        async with ObjectStore.open(f"sqlite:///{tmp_path / 'portico.db'}") as store:
            limiter = RateLimiter(store.rate_buckets, limit)
            for _ in range(10):
                assert await _call(limiter)
            clock.now += 2.0  # the bucket is full again, the share left alone
            assert await _burst(limiter) == limit.burst

    run(scenario())
