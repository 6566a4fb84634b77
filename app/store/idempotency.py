"""The first outcome of each call made with an idempotency key, shared by every process.

A record is written in the same transaction as the call's own writes (``ObjectStore.atomically``),
so a call that committed always has its outcome here, even if its process died before replying.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, insert, select

from app.store.database import Database
from app.store.tables import IdempotencyRecord, core_table, utc_now

_records = core_table(IdempotencyRecord)


@dataclass(frozen=True, slots=True)
class StoredOutcome:
    """What a keyed call answered first: ``code`` 0 with the reply's bytes, else an error code
    with its serialized ``google.rpc.Status``."""

    method: str
    request_hash: str
    code: int
    outcome: bytes


def select_outcome(conn: Connection, caller: str, key: str, now: datetime) -> StoredOutcome | None:
    """The unexpired outcome under ``(caller, key)`` (a primary-key read), if any."""
    row = conn.execute(
        select(_records.c.method, _records.c.request_hash, _records.c.code, _records.c.outcome)
        .where(_records.c.caller == caller, _records.c.key == key)
        .where(_records.c.expires_at > now)
    ).first()
    if row is None:
        return None
    return StoredOutcome(row.method, row.request_hash, row.code, row.outcome)


def insert_outcome(
    conn: Connection,
    caller: str,
    key: str,
    outcome: StoredOutcome,
    now: datetime,
    expires_at: datetime,
) -> None:
    """Record ``outcome`` under ``(caller, key)``, replacing an expired record of the key."""
    conn.execute(delete(_records).where(_records.c.caller == caller, _records.c.key == key))
    conn.execute(
        insert(_records).values(
            caller=caller,
            key=key,
            method=outcome.method,
            request_hash=outcome.request_hash,
            code=outcome.code,
            outcome=outcome.outcome,
            created_at=now,
            expires_at=expires_at,
        )
    )


def delete_expired(conn: Connection, now: datetime, limit: int) -> int:
    """Forget up to ``limit`` expired records (oldest first, by the expiry index)."""
    oldest = (
        select(_records.c.caller, _records.c.key)
        .where(_records.c.expires_at <= now)
        .order_by(_records.c.expires_at)
        .limit(limit)
    )
    keys = [(row.caller, row.key) for row in conn.execute(oldest)]
    for caller, key in keys:
        conn.execute(delete(_records).where(_records.c.caller == caller, _records.c.key == key))
    return len(keys)


class IdempotencyRecords:
    """Outcomes of keyed calls, kept for ``retention`` after the call."""

    # Expired records forgotten per write transaction, so cleaning up never holds the write
    # lock for long.
    PURGE_BATCH = 500

    def __init__(self, database: Database) -> None:
        self._database = database

    async def get(self, caller: str, key: str) -> StoredOutcome | None:
        """The unexpired outcome under ``(caller, key)``; inside ``atomically`` it is read in the
        transaction (so a concurrent repeat that waited for the lock sees the first's record)."""
        return await self._database.read(select_outcome, caller, key, utc_now())

    async def put(
        self, caller: str, key: str, outcome: StoredOutcome, retention: timedelta
    ) -> None:
        """Record ``outcome``; inside ``atomically`` it commits with the call's writes."""
        now = utc_now()
        await self._database.write(insert_outcome, caller, key, outcome, now, now + retention)

    async def forget_expired(self, *, now: datetime | None = None) -> int:
        """Delete every expired record, a batch per transaction; returns how many."""
        total = 0
        while True:
            removed = await self._database.write(delete_expired, now or utc_now(), self.PURGE_BATCH)
            total += removed
            if removed < self.PURGE_BATCH:
                return total
