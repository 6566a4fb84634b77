"""The throttle in front of the store's counts: keys, and attempts in flight per process."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from app.auth.throttle import USER_AT_ADDRESS, LoginThrottle, Throttled
from app.store import ObjectStore

LIMIT = dataclasses.replace(USER_AT_ADDRESS, max_failures=3)


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
