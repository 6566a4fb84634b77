"""Token buckets shared by every process on the store: the rate limits of callers.

A bucket holds up to ``burst`` tokens and refills at ``rate`` tokens a second; it is kept as the
tokens it held at its last take and when that was, and refilled by the elapsed time when it is
next read. Processes *take* tokens in shares (see ``app/auth/rate_limit.py``): one write
transaction each, which serialises takes everywhere, so the tokens handed out never exceed what
the bucket allows whatever the number of workers and replicas.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import Connection, delete, insert, select, update

from app.store.database import Database
from app.store.tables import RateBucket, core_table

_buckets = core_table(RateBucket)


@dataclass(frozen=True)
class Grant:
    """``tokens`` taken (0 when the bucket had less than one); with none, the seconds until
    the bucket holds one again."""

    tokens: int
    wait: float


def take(conn: Connection, key: str, want: int, rate: float, burst: int, now: float) -> Grant:
    """Take up to ``want`` whole tokens from the bucket ``key`` (a new bucket is full)."""
    row = conn.execute(
        select(_buckets.c.tokens, _buckets.c.updated_at).where(_buckets.c.key == key)
    ).first()
    if row is None:
        tokens = float(burst)
    else:
        # A clock behind the last taker's refills nothing rather than draining the bucket.
        tokens = min(float(burst), row.tokens + max(0.0, now - row.updated_at) * rate)
    granted = min(want, int(tokens))
    if granted < 1:
        return Grant(0, (1.0 - tokens) / rate)
    left = tokens - granted
    if row is None:
        conn.execute(insert(_buckets).values(key=key, tokens=left, updated_at=now))
    else:
        conn.execute(
            update(_buckets).where(_buckets.c.key == key).values(tokens=left, updated_at=now)
        )
    return Grant(granted, 0.0)


def forget_full(conn: Connection, now: float, idle_seconds: float) -> int:
    """Drop buckets untouched for ``idle_seconds``: long enough for any of them to be full
    again, which is what a missing bucket means."""
    stale = _buckets.c.updated_at <= now - idle_seconds
    return int(conn.execute(delete(_buckets).where(stale)).rowcount)


class RateBuckets:
    """The shared buckets, over the store's database."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def take(
        self, key: str, want: int, rate: float, burst: int, now: float | None = None
    ) -> Grant:
        """Take up to ``want`` tokens from the bucket ``key``."""
        at = time.time() if now is None else now
        return await self.database.write(take, key, want, rate, burst, at)

    async def forget_full(self, idle_seconds: float, now: float | None = None) -> int:
        """Drop buckets idle long enough to be full again; returns how many."""
        at = time.time() if now is None else now
        return await self.database.write(forget_full, at, idle_seconds)
