"""Failed-login counts shared by every process on the store, with lockouts that back off.

An attempt is *reserved* before its password is checked (counted as a failure in one write
transaction, which serialises concurrent attempts everywhere) and *settled* afterwards: a
failure that reached the limit locks the key, a success forgets or refunds it. Reserving first
means a burst of concurrent guesses gets no more checks than the limit allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, insert, select, update

from app.store.database import Database
from app.store.tables import LoginAttempt, core_table, utc_now

_attempts = core_table(LoginAttempt)
# Lockouts in a row are remembered this long after the last failure, then forgiven.
STRIKE_MEMORY = timedelta(days=1)


@dataclass(frozen=True)
class Limit:
    """At most ``max_failures`` in ``window`` under one key; then a lockout of ``lockout``,
    doubling with each lockout in a row up to ``max_lockout``. ``forget_on_success`` drops the
    key's record on a good login (else the reserved attempt is only refunded)."""

    max_failures: int
    window: timedelta
    lockout: timedelta
    max_lockout: timedelta
    forget_on_success: bool


@dataclass(frozen=True)
class Refusal:
    """The key that refuses an attempt, and for how many seconds."""

    key: str
    retry_after: float


def _row(conn: Connection, key: str) -> LoginAttempt | None:
    found = conn.execute(select(_attempts).where(_attempts.c.key == key)).first()
    return None if found is None else LoginAttempt(**found._mapping)


def reserve(conn: Connection, keys: Sequence[tuple[str, Limit]], now: datetime) -> Refusal | None:
    """Count one attempt against every key, unless one of them refuses it (then count none)."""
    rows = {key: _row(conn, key) for key, _ in keys}
    for key, limit in keys:
        row = rows[key]
        if row is None:
            continue
        if row.locked_until > now:
            return Refusal(key, (row.locked_until - now).total_seconds())
        if now - row.window_start < limit.window and row.failures >= limit.max_failures:
            # Attempts still being checked fill the budget: wait for them to settle.
            return Refusal(key, limit.lockout.total_seconds())
    for key, limit in keys:
        row = rows[key]
        if row is None:
            conn.execute(
                insert(_attempts).values(
                    key=key,
                    failures=1,
                    window_start=now,
                    locked_until=now,
                    strikes=0,
                    last_failure=now,
                )
            )
            continue
        fresh_window = now - row.window_start >= limit.window
        conn.execute(
            update(_attempts)
            .where(_attempts.c.key == key)
            .values(
                failures=1 if fresh_window else row.failures + 1,
                window_start=now if fresh_window else row.window_start,
                strikes=0 if now - row.last_failure >= STRIKE_MEMORY else row.strikes,
                last_failure=now,
            )
        )
    return None


def settle(
    conn: Connection, keys: Sequence[tuple[str, Limit]], succeeded: bool, now: datetime
) -> list[Refusal]:
    """Settle a reserved attempt; returns the lockouts a failure started."""
    locked = []
    for key, limit in keys:
        row = _row(conn, key)
        if row is None:
            continue
        if succeeded:
            if limit.forget_on_success:
                conn.execute(delete(_attempts).where(_attempts.c.key == key))
            else:
                failures = max(0, row.failures - 1)
                conn.execute(
                    update(_attempts).where(_attempts.c.key == key).values(failures=failures)
                )
            continue
        if row.failures >= limit.max_failures and row.locked_until <= now:
            strikes = row.strikes + 1
            lockout = min(limit.lockout * 2 ** (strikes - 1), limit.max_lockout)
            conn.execute(
                update(_attempts)
                .where(_attempts.c.key == key)
                .values(failures=0, window_start=now, locked_until=now + lockout, strikes=strikes)
            )
            locked.append(Refusal(key, lockout.total_seconds()))
    return locked


def forget_stale(conn: Connection, now: datetime) -> int:
    """Drop records with nothing left to remember (no lockout, strikes forgiven)."""
    stale = (_attempts.c.last_failure <= now - STRIKE_MEMORY) & (_attempts.c.locked_until <= now)
    return int(conn.execute(delete(_attempts).where(stale)).rowcount)


class LoginAttempts:
    """The shared counts, over the store's database."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def reserve(
        self, keys: Sequence[tuple[str, Limit]], now: datetime | None = None
    ) -> Refusal | None:
        """Reserve one attempt under every key, or the refusal of the key that forbids it."""
        return await self.database.write(reserve, keys, now or utc_now())

    async def settle(
        self, keys: Sequence[tuple[str, Limit]], succeeded: bool, now: datetime | None = None
    ) -> list[Refusal]:
        """Settle a reserved attempt; returns the lockouts a failure started."""
        return await self.database.write(settle, keys, succeeded, now or utc_now())

    async def forget_stale(self, now: datetime | None = None) -> int:
        """Drop records with nothing left to remember; returns how many."""
        return await self.database.write(forget_stale, now or utc_now())
