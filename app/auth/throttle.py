"""Login throttling: a user at an address, and an address, may fail only so often.

Two keys per attempt (see ``app/store/login_attempts.py`` for how counts are kept):

- the username at the client's address: 5 failures in 5 minutes lock it for a minute, doubling
  with each lockout in a row up to an hour; a good login forgets it. Someone guessing ``admin``
  from one address is stopped, and the real admin at another address is not;
- the address alone: 20 failures in 5 minutes, with the same lockouts, so one address cannot
  spray many usernames either.

Counts live in the store, shared by every worker and replica. This process also keeps, per key,
the attempts it is checking right now and the lockouts it has learned of: both are consulted
and reserved synchronously, before any await, so a burst of concurrent guesses never gets more
password checks than the limit, and a locked-out flood costs no database write.
"""

from __future__ import annotations

import time
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from datetime import timedelta

from app.auth.client_address import throttle_address
from app.store.login_attempts import Limit, LoginAttempts, Refusal

USER_AT_ADDRESS = Limit(
    max_failures=5,
    window=timedelta(minutes=5),
    lockout=timedelta(minutes=1),
    max_lockout=timedelta(hours=1),
    forget_on_success=True,
)
ADDRESS = Limit(
    max_failures=20,
    window=timedelta(minutes=5),
    lockout=timedelta(minutes=1),
    max_lockout=timedelta(hours=1),
    forget_on_success=False,
)

Keys = tuple[tuple[str, Limit], ...]


class Throttled(Exception):
    """The attempt is refused without checking the password."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(f"{refusal.key} is throttled for {refusal.retry_after:.0f} s")
        self.refusal = refusal


@dataclass
class LoginThrottle:
    """Reserves attempts before their password is checked, and settles them after."""

    attempts: LoginAttempts
    user_limit: Limit = USER_AT_ADDRESS
    address_limit: Limit = ADDRESS
    # Bounded, so a flood of distinct keys cannot grow this process's memory without limit.
    max_local_keys: int = 10_000

    def __post_init__(self) -> None:
        self._in_flight: defaultdict[str, int] = defaultdict(int)
        self._locked_until: OrderedDict[str, float] = OrderedDict()

    def keys(self, username: str, address: str) -> Keys:
        """The keys an attempt by ``username`` from ``address`` counts under."""
        unit = throttle_address(address)
        return (
            (f"user:{username.lower()}@{unit}", self.user_limit),
            (f"address:{unit}", self.address_limit),
        )

    async def reserve(self, keys: Keys) -> None:
        """Reserve one attempt under ``keys``; Throttled if any of them forbids it."""
        self._reserve_here(keys)  # synchronously: nothing else runs before the count is up
        try:
            refusal = await self.attempts.reserve(keys)
        except BaseException:
            self._release(keys)
            raise
        if refusal is not None:
            self._release(keys)
            self._remember(refusal)
            raise Throttled(refusal)

    async def settle(self, keys: Keys, succeeded: bool) -> list[Refusal]:
        """Record the attempt's outcome; returns the lockouts it started."""
        self._release(keys)
        locked = await self.attempts.settle(keys, succeeded)
        for refusal in locked:
            self._remember(refusal)
        return locked

    def release(self, keys: Keys) -> None:
        """Give up a reservation that cannot be settled (its failure stays counted)."""
        self._release(keys)

    def _reserve_here(self, keys: Keys) -> None:
        now = time.monotonic()
        for key, limit in keys:
            until = self._locked_until.get(key, 0.0)
            if until > now:
                raise Throttled(Refusal(key, until - now))
            if self._in_flight[key] >= limit.max_failures:
                raise Throttled(Refusal(key, limit.lockout.total_seconds()))
        for key, _ in keys:
            self._in_flight[key] += 1

    def _release(self, keys: Keys) -> None:
        for key, _ in keys:
            left = self._in_flight[key] - 1
            if left > 0:
                self._in_flight[key] = left
            else:
                self._in_flight.pop(key, None)

    def _remember(self, refusal: Refusal) -> None:
        self._locked_until[refusal.key] = time.monotonic() + refusal.retry_after
        self._locked_until.move_to_end(refusal.key)
        while len(self._locked_until) > self.max_local_keys:
            self._locked_until.popitem(last=False)
