"""The rate limiter over the store: two processes' limiters share one bucket, and neither
admits more than the bucket allows, whatever the size of the shares they take."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.auth.rate_limit import Limit, RateLimited, RateLimiter
from app.store import ObjectStore
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
