"""The object store servicers use: protobuf objects with revisions, transactions and watches.

Every write appends to the event log and takes the new log revision as the object's revision, so
revisions are global, only grow, and are never reused (not even after a delete and re-create).
An update that changes no byte writes nothing and emits no event.

To show a listing and then follow it: read ``current_revision()``, then ``list()``, then
``watch(kinds, that_revision)``; an event may repeat what the listing already showed, none is lost.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
from collections.abc import AsyncGenerator, Collection
from datetime import datetime, timedelta
from types import TracebackType
from typing import Self

from sqlalchemy import Connection, delete, func, select
from sqlalchemy.engine import URL

from app.observe.timing import instrument
from app.store.accounts import Accounts, Revocations
from app.store.counters import set_counter
from app.store.database import Database
from app.store.engine import DEFAULT_BUSY_TIMEOUT, create_store_engine
from app.store.group_commit import DEFAULT_MAX_MEMBERS, DEFAULT_MAX_SECONDS
from app.store.idempotency import IdempotencyRecords
from app.store.indexes import INDEXES
from app.store.login_attempts import LoginAttempts
from app.store.rate_buckets import RateBuckets
from app.store.records import (
    SQLITE_GET,
    Message,
    Record,
    as_bytes,
    delete_record,
    event_of,
    insert_record,
    select_record,
    select_records,
    select_where,
    sqlite_record,
    update_record,
)
from app.store.runner import call_mapped
from app.store.schema import ensure_schema
from app.store.tables import (
    COMPACTED_REVISION,
    EventLogEntry,
    core_table,
    utc_now,
)
from app.store.transactions import Transaction, TransactionBlock
from app.store.watch import (
    REPLAY_BATCH,
    SQLITE_HEAD,
    Commit,
    Event,
    EventType,
    RevisionFeed,
    compacted_revision,
    follow_commits,
    follow_events,
    head_revision,
    objects_at,
    read_log,
)

DEFAULT_COMPACTION_AGE = timedelta(days=1)
# Other processes' writes are noticed by polling the log's head this often (only while someone
# watches): the floor of cross-worker (or cross-replica) stream latency. On SQLite a poll is an
# inline read of microseconds, and every 10 ms brought the p99 of SSE events reaching subscribers
# of two workers from 64-114 ms to 38-50 ms; on PostgreSQL it is a query on a pooled
# connection, and every 10 ms halved the replica harness's create rate.
SQLITE_POLL_INTERVAL = 0.01
POSTGRESQL_POLL_INTERVAL = 0.05

_log = core_table(EventLogEntry)


def compact_log(conn: Connection, cutoff: datetime) -> int:
    """Drop events older than ``cutoff``; returns the revision the log is now compacted through."""
    already = compacted_revision(conn)
    newest_old = conn.execute(select(func.max(_log.c.revision)).where(_log.c.at < cutoff)).scalar()
    if newest_old is None or newest_old <= already:
        return already
    conn.execute(delete(_log).where(_log.c.revision <= newest_old))
    set_counter(conn, COMPACTED_REVISION, int(newest_old))
    return int(newest_old)


def _log_bounds(conn: Connection) -> tuple[int, int]:
    """How many events the log keeps, and its newest revision."""
    kept = conn.execute(select(func.count()).select_from(_log)).scalar()
    return int(kept or 0), head_revision(conn)


# --- the async API -------------------------------------------------------------------------


class ObjectStore:
    """Persistent objects with revisions and an event log with watches; beside them the
    store's typed tables (accounts, revocations, login attempts, rate limit buckets,
    idempotency records)."""

    def __init__(
        self,
        database: Database,
        *,
        compaction_age: timedelta = DEFAULT_COMPACTION_AGE,
        poll_interval: float | None = None,
    ) -> None:
        self.database = database
        self.compaction_age = compaction_age
        self.accounts = Accounts(database)
        self.revocations = Revocations(database)
        self.login_attempts = LoginAttempts(database)
        self.rate_buckets = RateBuckets(database)
        self.idempotency = IdempotencyRecords(database)
        if poll_interval is None:
            sqlite = database.is_sqlite
            poll_interval = SQLITE_POLL_INTERVAL if sqlite else POSTGRESQL_POLL_INTERVAL
        self._feed = RevisionFeed(
            database, call_mapped(self._head_sync), poll_interval, self._read_head
        )

    @classmethod
    def open(
        cls,
        url: str | URL,
        *,
        compaction_age: timedelta = DEFAULT_COMPACTION_AGE,
        poll_interval: float | None = None,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        workers: int = 8,
        group_max_members: int = DEFAULT_MAX_MEMBERS,
        group_max_seconds: float = DEFAULT_MAX_SECONDS,
    ) -> ObjectStore:
        """Connect to ``url`` (``sqlite:///file`` or ``postgresql://...``) and create the schema.

        ``group_max_members`` and ``group_max_seconds`` bound group commit (see Database);
        ``poll_interval`` defaults to the backend's (``SQLITE_POLL_INTERVAL`` or
        ``POSTGRESQL_POLL_INTERVAL``)."""
        engine = create_store_engine(url, pool_size=workers + 2, busy_timeout=busy_timeout)
        try:
            database = Database(
                engine,
                workers=workers,
                busy_timeout=busy_timeout,
                group_max_members=group_max_members,
                group_max_seconds=group_max_seconds,
            )
        except BaseException:
            engine.dispose()
            raise
        try:
            ensure_schema(database)
            return cls(database, compaction_age=compaction_age, poll_interval=poll_interval)
        except BaseException:
            database.close_now()
            raise

    async def _read_head(self) -> int:
        """The log's head: on SQLite a query on the loop (microseconds; through the pool and a
        worker thread it cost over half a millisecond, and every watching process polls it)."""
        rows = self.database.read_inline(SQLITE_HEAD, (COMPACTED_REVISION,))
        if rows is not None:
            return int(rows[0][0])
        return await self.database.read(head_revision)

    def _head_sync(self) -> int:
        with self.database.engine.connect() as conn:
            return head_revision(conn)

    @property
    def is_sqlite(self) -> bool:
        """Whether the store lives in a SQLite file (one process is then always the leader)."""
        return self.database.is_sqlite

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop background polling and close every database connection."""
        await self._feed.close()
        await self.database.close()

    # objects

    async def get(self, kind: str, key: str) -> Record | None:
        """The object ``(kind, key)``, or None."""
        rows = self.database.read_inline(SQLITE_GET, (kind, key))
        if rows is not None:
            return sqlite_record(kind, key, rows)
        return await self.database.read(select_record, kind, key)

    async def list(self, kind: str, prefix: str = "") -> list[Record]:
        """Objects of ``kind`` whose key starts with ``prefix``, ordered by key."""
        return await self.database.read(select_records, kind, prefix)

    async def list_where(self, kind: str, index: str, value: str) -> builtins.list[Record]:
        """Objects of ``kind`` whose secondary index ``index`` holds ``value``, ordered by key:
        an index read (see app.store.indexes; the index must be declared)."""
        if index not in INDEXES.get(kind, {}):
            raise ValueError(f"{kind} has no index {index!r}")
        return await self.database.read(select_where, kind, index, value)

    async def create(self, kind: str, key: str, data: bytes | Message) -> Record:
        """Create an object; ``AlreadyExists`` if the key is taken."""
        record = await self.database.write(insert_record, kind, key, as_bytes(data), utc_now())
        self._advance(record, EventType.CREATED)
        return record

    async def update(
        self,
        kind: str,
        key: str,
        data: bytes | Message,
        expected_revision: int | None = None,
    ) -> Record:
        """Replace an object's data; ``NotFound`` if missing, ``Conflict`` on a stale revision."""
        record, changed = await self.database.write(
            update_record, kind, key, as_bytes(data), expected_revision, utc_now()
        )
        if changed:
            self._advance(record, EventType.UPDATED)
        return record

    async def delete(self, kind: str, key: str, expected_revision: int | None = None) -> Record:
        """Delete an object and return its last data at the deletion's revision."""
        record = await self.database.write(delete_record, kind, key, expected_revision, utc_now())
        self._advance(record, EventType.DELETED)
        return record

    def transaction(self) -> contextlib.AbstractAsyncContextManager[Transaction]:
        """Several reads and writes that commit together or not at all (rolled back on error)."""
        return TransactionBlock(self.database, self._feed)

    def _advance(self, record: Record, type_: EventType) -> None:
        # Watchers learn of a write once it is committed (later, inside an ambient transaction).
        event = event_of(record, type_)
        self.database.after_commit(functools.partial(self._feed.advance, record.revision, (event,)))

    def atomically(self) -> contextlib.AbstractAsyncContextManager[object]:
        """One transaction that every store call of this task joins until the block ends
        (transactions inside become savepoints): all of it commits, or none. It holds the write
        lock throughout, so the block must not wait for another writer."""
        return self.database.ambient()

    # event log

    def watch(
        self, kinds: Collection[str] | str | None, since_revision: int
    ) -> AsyncGenerator[Event]:
        """Every event after ``since_revision`` for ``kinds`` (None: all), then new ones live.

        Raises ``OutOfRange`` if the log was compacted past ``since_revision``.
        """
        return follow_events(self.database, self._feed, kinds, since_revision)

    def watch_commits(
        self, kinds: Collection[str] | str | None, since_revision: int
    ) -> AsyncGenerator[Commit]:
        """As :meth:`watch`, each transaction's events together: one :class:`Commit` per
        transaction (of its writes of ``kinds``), the same for every watcher."""
        return follow_commits(self.database, self._feed, kinds, since_revision)

    async def changes(self, kinds: Collection[str], after: int) -> tuple[builtins.list[Event], int]:
        """Every committed event of ``kinds`` after revision ``after``, and the revision they
        are complete through, without waiting for more. ``OutOfRange`` if compacted."""
        found: builtins.list[Event] = []
        wanted = tuple(kinds)
        while True:
            events, after = await read_log(self.database, after, wanted)
            found.extend(events)
            if len(events) < REPLAY_BATCH:
                return found, after

    async def list_at(self, kind: str, revision: int) -> builtins.list[bytes]:
        """The data of every ``kind`` object as it stood at ``revision``: with ``watch(kind,
        revision)`` a reader sees each later write exactly once. ``OutOfRange`` if compacted."""
        return await self.database.read(objects_at, kind, revision)

    async def current_revision(self) -> int:
        """The newest committed revision; watching from it yields only later writes."""
        revision = await self._read_head()
        # Inside an ambient transaction the head may be uncommitted: tell watchers at commit.
        self.database.after_commit(functools.partial(self._feed.advance, revision))
        return revision

    async def compact(self, *, now: datetime | None = None) -> int:
        """Drop events older than ``compaction_age``; returns the revision compacted through."""
        cutoff = (now or utc_now()) - self.compaction_age
        compacted = await self.database.write(compact_log, cutoff)
        self._feed.forget_through(compacted)
        return compacted

    async def event_log_size(self) -> tuple[int, int]:
        """How many events the log keeps, and its newest revision."""
        return await self.database.read(_log_bounds)


# Every operation is timed (portico_store_operation_duration_seconds{operation}) and traced
# inside a traced call; transaction steps as "transaction.<name>".
instrument(ObjectStore, skip=frozenset({"close"}))
