"""The throttle in front of the store's counts: keys, and attempts in flight per process."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from app.auth.throttle import LoginThrottle, Throttled
from app.store import ObjectStore
from app.store.login_attempts import Limit

LIMIT = Limit(
    max_failures=3,
    window=timedelta(seconds=60),
    lockout=timedelta(seconds=30),
    max_lockout=timedelta(seconds=100),
    forget_on_success=True,
)


def test_attempts_in_flight_are_capped_before_any_await(tmp_path):
    store = ObjectStore.open(f"sqlite:///{tmp_path / 'portico.db'}")
    throttle = LoginThrottle(store.login_attempts, user_limit=LIMIT)
    keys = throttle.keys("erin", "10.0.0.1")

    async def burst() -> list[bool]:
        reservations = [asyncio.ensure_future(throttle.reserve(keys)) for _ in range(10)]
        outcomes = await asyncio.gather(*reservations, return_exceptions=True)
        await store.close()
        return [isinstance(o, Throttled) for o in outcomes]

    refused = asyncio.run(burst())
    assert refused.count(False) == 3


@pytest.mark.parametrize(
    ("address", "unit"),
    [("10.0.0.1", "10.0.0.1"), ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64")],
)
def test_ipv6_clients_are_throttled_by_their_64(tmp_path, address, unit):
    store = ObjectStore.open(f"sqlite:///{tmp_path / 'portico.db'}")
    throttle = LoginThrottle(store.login_attempts)
    assert throttle.keys("Frank", address)[0][0] == f"user:frank@{unit}"
    asyncio.run(store.close())
