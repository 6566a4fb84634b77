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
import sqlite3
from collections.abc import AsyncGenerator, AsyncIterator, Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update
from sqlalchemy.dialects import postgresql as postgresql_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import URL

from app.observe.timing import instrument
from app.store import accounts
from app.store.database import Database
from app.store.engine import DEFAULT_BUSY_TIMEOUT, create_store_engine
from app.store.errors import AlreadyExists, Conflict, NotFound
from app.store.group_commit import DEFAULT_MAX_MEMBERS, DEFAULT_MAX_SECONDS
from app.store.idempotency import IdempotencyRecords
from app.store.login_attempts import LoginAttempts
from app.store.runner import TransactionRunner, call_mapped
from app.store.schema import ensure_schema
from app.store.tables import (
    COMPACTED_REVISION,
    Account,
    EventLogEntry,
    StoredObject,
    StoreMeta,
    core_table,
    inserted_id,
    utc_now,
)
from app.store.watch import (
    Event,
    EventType,
    RevisionFeed,
    compacted_revision,
    follow_events,
    head_revision,
    objects_at,
)

DEFAULT_COMPACTION_AGE = timedelta(days=1)
# Other processes' writes are noticed by polling the log's head this often (only while someone
# watches): a cheap query, and the floor of cross-worker stream latency.
DEFAULT_POLL_INTERVAL = 0.05

_objects = core_table(StoredObject)
_log = core_table(EventLogEntry)
_meta = core_table(StoreMeta)
_RECORD_COLUMNS = (
    _objects.c.kind,
    _objects.c.key,
    _objects.c.data,
    _objects.c.revision,
    _objects.c.created_at,
    _objects.c.updated_at,
)
_SQLITE_GET = (
    'SELECT data, revision, created_at, updated_at FROM stored_object WHERE kind = ? AND "key" = ?'
)
_SQLITE_IS_REVOKED = "SELECT 1 FROM revoked_token WHERE jti = ?"


class Message(Protocol):
    """The part of a protobuf message the store uses."""

    def SerializeToString(self, *, deterministic: bool = ...) -> bytes: ...

    @classmethod
    def FromString(cls, s: bytes) -> Self: ...


M = TypeVar("M", bound=Message)


@dataclass(frozen=True, slots=True)
class Record:
    """A stored object: serialized protobuf ``data`` at ``revision``."""

    kind: str
    key: str
    data: bytes
    revision: int
    created_at: datetime
    updated_at: datetime

    def parse(self, message_type: type[M]) -> M:
        """Decode ``data`` as ``message_type``."""
        return message_type.FromString(self.data)


def _as_bytes(data: bytes | Message) -> bytes:
    if isinstance(data, bytes):
        return data
    # Deterministic: equal messages give equal bytes, so an unchanged update is recognised.
    return data.SerializeToString(deterministic=True)


def _record(row: Any) -> Record:
    return Record(row.kind, row.key, row.data, row.revision, row.created_at, row.updated_at)


def _event(record: Record, type_: EventType) -> Event:
    """The event log entry a write of ``record`` appended (a deletion keeps the last data)."""
    return Event(record.revision, record.kind, record.key, type_, record.data, record.updated_at)


def _sqlite_time(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _prefix_upper_bound(prefix: str) -> str | None:
    # Keys compare by code point on both backends, so [prefix, bound) holds exactly the matches.
    for cut in range(len(prefix), 0, -1):
        point = ord(prefix[cut - 1]) + 1
        if 0xD800 <= point <= 0xDFFF:
            point = 0xE000
        if point <= 0x10FFFF:
            return prefix[: cut - 1] + chr(point)
    return None


# --- statements run on a worker thread, inside a transaction where they write ----------------


# Built once: constructing a statement per call costs more than a local PostgreSQL round trip.
_SELECT_RECORD = select(*_RECORD_COLUMNS).where(
    _objects.c.kind == bindparam("kind"), _objects.c.key == bindparam("key")
)


def select_record(conn: Connection, kind: str, key: str) -> Record | None:
    """The object ``(kind, key)``, if any."""
    row = conn.execute(_SELECT_RECORD, {"kind": kind, "key": key}).first()
    return None if row is None else _record(row)


def select_records(conn: Connection, kind: str, prefix: str) -> list[Record]:
    """Objects of ``kind`` whose key starts with ``prefix``, ordered by key."""
    query = select(*_RECORD_COLUMNS).where(_objects.c.kind == kind).order_by(_objects.c.key)
    if prefix:
        query = query.where(_objects.c.key >= prefix)
        bound = _prefix_upper_bound(prefix)
        if bound is not None:
            query = query.where(_objects.c.key < bound)
    return [_record(row) for row in conn.execute(query)]


_INSERT_EVENT = insert(_log)
# A key already taken inserts (and returns) nothing instead of failing the transaction.
_INSERT_NEW_OBJECT = {
    "sqlite": sqlite_dialect.insert(_objects).on_conflict_do_nothing().returning(_objects.c.kind),
    "postgresql": postgresql_dialect.insert(_objects)
    .on_conflict_do_nothing()
    .returning(_objects.c.kind),
}
_DELETE_EVENT = delete(_log).where(_log.c.revision == bindparam("revision"))
# Bound names differ from the columns: those names are taken by the SET clause's values.
_UPDATE_OBJECT = update(_objects).where(
    _objects.c.kind == bindparam("of_kind"), _objects.c.key == bindparam("of_key")
)
_DELETE_OBJECT = delete(_objects).where(
    _objects.c.kind == bindparam("kind"), _objects.c.key == bindparam("key")
)


def _append_event(
    conn: Connection, kind: str, key: str, type_: EventType, data: bytes, now: datetime
) -> int:
    values = {"kind": kind, "key": key, "type": type_.value, "data": data, "at": now}
    return inserted_id(conn.execute(_INSERT_EVENT, values))


def insert_record(conn: Connection, kind: str, key: str, data: bytes, now: datetime) -> Record:
    """Create an object; ``AlreadyExists`` if the key is taken.

    Two statements, no read first: the event takes the next revision, and the object's insert
    does nothing if the key is taken (then the event is taken back: a revision is skipped,
    never reused).
    """
    revision = _append_event(conn, kind, key, EventType.CREATED, data, now)
    values = {
        "kind": kind,
        "key": key,
        "data": data,
        "revision": revision,
        "created_at": now,
        "updated_at": now,
    }
    if conn.execute(_INSERT_NEW_OBJECT[conn.dialect.name], values).first() is None:
        conn.execute(_DELETE_EVENT, {"revision": revision})
        raise AlreadyExists(f"{kind} {key!r} already exists")
    return Record(kind, key, data, revision, now, now)


def _existing(
    conn: Connection,
    kind: str,
    key: str,
    expected_revision: int | None,
    known: Record | None = None,
) -> Record:
    # ``known``: the object as this transaction already read or wrote it (no second read).
    current = known if known is not None else select_record(conn, kind, key)
    if current is None:
        raise NotFound(f"{kind} {key!r} not found")
    if expected_revision is not None and current.revision != expected_revision:
        raise Conflict(
            f"{kind} {key!r} is at revision {current.revision}, not {expected_revision}; "
            "read it again and retry",
            expected_revision=expected_revision,
            actual_revision=current.revision,
        )
    return current


def update_record(
    conn: Connection,
    kind: str,
    key: str,
    data: bytes,
    expected_revision: int | None,
    now: datetime,
    known: Record | None = None,
) -> tuple[Record, bool]:
    """Replace an object's data; returns the record and whether anything changed."""
    current = _existing(conn, kind, key, expected_revision, known)
    if current.data == data:
        return current, False
    revision = _append_event(conn, kind, key, EventType.UPDATED, data, now)
    values = {"of_kind": kind, "of_key": key, "data": data, "revision": revision, "updated_at": now}
    conn.execute(_UPDATE_OBJECT, values)
    return Record(kind, key, data, revision, current.created_at, now), True


def delete_record(
    conn: Connection,
    kind: str,
    key: str,
    expected_revision: int | None,
    now: datetime,
    known: Record | None = None,
) -> Record:
    """Delete an object; returns its last data at the revision of the deletion."""
    current = _existing(conn, kind, key, expected_revision, known)
    revision = _append_event(conn, kind, key, EventType.DELETED, current.data, now)
    conn.execute(_DELETE_OBJECT, {"kind": kind, "key": key})
    return Record(kind, key, current.data, revision, current.created_at, now)


def compact_log(conn: Connection, cutoff: datetime) -> int:
    """Drop events older than ``cutoff``; returns the revision the log is now compacted through."""
    already = compacted_revision(conn)
    newest_old = conn.execute(select(func.max(_log.c.revision)).where(_log.c.at < cutoff)).scalar()
    if newest_old is None or newest_old <= already:
        return already
    conn.execute(delete(_log).where(_log.c.revision <= newest_old))
    if conn.execute(select(_meta.c.name).where(_meta.c.name == COMPACTED_REVISION)).first():
        conn.execute(
            update(_meta).where(_meta.c.name == COMPACTED_REVISION).values(value=newest_old)
        )
    else:
        conn.execute(insert(_meta).values(name=COMPACTED_REVISION, value=newest_old))
    return int(newest_old)


def _log_bounds(conn: Connection) -> tuple[int, int]:
    """How many events the log keeps, and its newest revision."""
    kept = conn.execute(select(func.count()).select_from(_log)).scalar()
    return int(kept or 0), head_revision(conn)


# --- the async API -------------------------------------------------------------------------


class Reader(Protocol):
    """What reading code needs: the store itself or a transaction."""

    async def get(self, kind: str, key: str) -> Record | None: ...

    async def list(self, kind: str, prefix: str = "") -> list[Record]: ...


class Writer(Reader, Protocol):
    """What writing code needs: a transaction (or the store, one write at a time)."""

    async def create(self, kind: str, key: str, data: bytes | Message) -> Record: ...

    async def update(self, kind: str, key: str, data: bytes | Message) -> Record: ...

    async def delete(self, kind: str, key: str) -> Record: ...


class Transaction:
    """Reads and writes applied atomically: all of them commit, or none does.

    It holds the store's write lock until it ends, so keep it short: no network calls inside.
    Nobody else can write meanwhile, so an object it has read or written is not read again.
    """

    def __init__(self, runner: TransactionRunner) -> None:
        self._runner = runner
        # The revision of the last write so far (0 before any): watchers are woken up to it.
        self.revision = 0
        self.written: list[Event] = []  # what the writes appended to the event log
        # Objects as this transaction last saw them (None: known to be absent).
        self._known: dict[tuple[str, str], Record | None] = {}

    def _wrote(self, record: Record, type_: EventType) -> None:
        self.revision = record.revision
        self.written.append(_event(record, type_))
        self._known[(record.kind, record.key)] = None if type_ is EventType.DELETED else record

    async def get(self, kind: str, key: str) -> Record | None:
        """The object, as this transaction sees it."""
        if (kind, key) in self._known:
            return self._known[(kind, key)]
        record = await self._runner.run(select_record, kind, key)
        self._known[(kind, key)] = record
        return record

    async def list(self, kind: str, prefix: str = "") -> list[Record]:
        """Objects of ``kind`` with keys starting with ``prefix``, as this transaction sees them."""
        return await self._runner.run(select_records, kind, prefix)

    async def create(self, kind: str, key: str, data: bytes | Message) -> Record:
        """Create an object; ``AlreadyExists`` if the key is taken."""
        if self._known.get((kind, key)) is not None:
            raise AlreadyExists(f"{kind} {key!r} already exists")
        record = await self._runner.run(insert_record, kind, key, _as_bytes(data), utc_now())
        self._wrote(record, EventType.CREATED)
        return record

    async def update(
        self,
        kind: str,
        key: str,
        data: bytes | Message,
        expected_revision: int | None = None,
    ) -> Record:
        """Replace an object's data; ``NotFound`` if missing, ``Conflict`` on a stale revision."""
        record, changed = await self._runner.run(
            update_record,
            kind,
            key,
            _as_bytes(data),
            expected_revision,
            utc_now(),
            self._known.get((kind, key)),
        )
        if changed:
            self._wrote(record, EventType.UPDATED)
        return record

    async def delete(self, kind: str, key: str, expected_revision: int | None = None) -> Record:
        """Delete an object; ``NotFound`` if missing, ``Conflict`` on a stale revision."""
        record = await self._runner.run(
            delete_record, kind, key, expected_revision, utc_now(), self._known.get((kind, key))
        )
        self._wrote(record, EventType.DELETED)
        return record


class ObjectStore:
    """Persistent objects with revisions, an event log with watches, accounts and revocations."""

    def __init__(
        self,
        database: Database,
        *,
        compaction_age: timedelta = DEFAULT_COMPACTION_AGE,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
    ) -> None:
        self.database = database
        self.compaction_age = compaction_age
        self.login_attempts = LoginAttempts(database)
        self.idempotency = IdempotencyRecords(database)
        self._feed = RevisionFeed(database, call_mapped(self._head_sync), poll_interval)

    @classmethod
    def open(
        cls,
        url: str | URL,
        *,
        compaction_age: timedelta = DEFAULT_COMPACTION_AGE,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        workers: int = 8,
        group_max_members: int = DEFAULT_MAX_MEMBERS,
        group_max_seconds: float = DEFAULT_MAX_SECONDS,
    ) -> ObjectStore:
        """Connect to ``url`` (``sqlite:///file`` or ``postgresql://...``) and create the schema.

        ``group_max_members`` and ``group_max_seconds`` bound group commit (see Database)."""
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
        reader = self.database.inline_reader
        if reader is not None and self.database.joined() is None:
            try:
                rows = reader.execute(_SQLITE_GET, (kind, key)).fetchall()
            except sqlite3.Error:
                pass  # busy or broken: the pooled path waits properly and maps the error
            else:
                if not rows:
                    return None
                data, revision, created_at, updated_at = rows[0]
                return Record(
                    kind, key, data, revision, _sqlite_time(created_at), _sqlite_time(updated_at)
                )
        return await self.database.read(select_record, kind, key)

    async def list(self, kind: str, prefix: str = "") -> list[Record]:
        """Objects of ``kind`` whose key starts with ``prefix``, ordered by key."""
        return await self.database.read(select_records, kind, prefix)

    async def create(self, kind: str, key: str, data: bytes | Message) -> Record:
        """Create an object; ``AlreadyExists`` if the key is taken."""
        record = await self.database.write(insert_record, kind, key, _as_bytes(data), utc_now())
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
            update_record, kind, key, _as_bytes(data), expected_revision, utc_now()
        )
        if changed:
            self._advance(record, EventType.UPDATED)
        return record

    async def delete(self, kind: str, key: str, expected_revision: int | None = None) -> Record:
        """Delete an object and return its last data at the deletion's revision."""
        record = await self.database.write(delete_record, kind, key, expected_revision, utc_now())
        self._advance(record, EventType.DELETED)
        return record

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        """Several reads and writes that commit together or not at all (rolled back on error)."""
        async with self.database.transaction() as runner:
            tx = Transaction(runner)
            yield tx
        self.database.after_commit(functools.partial(self._feed.advance, tx.revision, tx.written))

    def _advance(self, record: Record, type_: EventType) -> None:
        # Watchers learn of a write once it is committed (later, inside an ambient transaction).
        event = _event(record, type_)
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

    async def list_at(self, kind: str, revision: int) -> builtins.list[bytes]:
        """The data of every ``kind`` object as it stood at ``revision``: with ``watch(kind,
        revision)`` a reader sees each later write exactly once. ``OutOfRange`` if compacted."""
        return await self.database.read(objects_at, kind, revision)

    async def current_revision(self) -> int:
        """The newest committed revision; watching from it yields only later writes."""
        revision = await self.database.read(head_revision)
        # Inside an ambient transaction the head may be uncommitted: tell watchers at commit.
        self.database.after_commit(functools.partial(self._feed.advance, revision))
        return revision

    async def compact(self, *, now: datetime | None = None) -> int:
        """Drop events older than ``compaction_age``; returns the revision compacted through."""
        cutoff = (now or utc_now()) - self.compaction_age
        compacted = await self.database.write(compact_log, cutoff)
        self._feed.forget_through(compacted)
        return compacted

    # accounts and revoked tokens

    async def create_account(
        self,
        username: str,
        password_hash: str,
        role: str,
        *,
        enabled: bool = True,
        developer: str = "",
        operator: str = "",
    ) -> Account:
        """Add an account (bound to an edge developer or operator organisation, if given);
        ``AlreadyExists`` if the username is taken."""
        return await self.database.write(
            accounts.insert_account,
            username,
            password_hash,
            role,
            enabled,
            utc_now(),
            (developer, operator),
        )

    async def get_account(self, username: str) -> Account | None:
        """The account called ``username``, or None."""
        return await self.database.read(accounts.select_account, username)

    async def get_account_by_id(self, account_id: int) -> Account | None:
        """The account with ``account_id``, or None."""
        return await self.database.read(accounts.select_account_by_id, account_id)

    async def list_accounts(self) -> builtins.list[Account]:  # list: the method below
        """Every account, ordered by username."""
        return await self.database.read(accounts.select_accounts)

    async def update_account(
        self,
        username: str,
        *,
        password_hash: str | None = None,
        role: str | None = None,
        enabled: bool | None = None,
    ) -> Account:
        """Change the given fields of an account; ``NotFound`` if missing."""
        changes = {
            name: value
            for name, value in (
                ("password_hash", password_hash),
                ("role", role),
                ("enabled", enabled),
            )
            if value is not None
        }
        return await self.database.write(accounts.change_account, username, changes, utc_now())

    async def delete_account(self, username: str) -> Account:
        """Delete an account and return it; ``NotFound`` if missing."""
        return await self.database.write(accounts.remove_account, username)

    async def revoke_token(self, jti: str, expires_at: datetime) -> None:
        """Refuse the token ``jti`` until ``expires_at``."""
        await self.database.write(accounts.insert_revocation, jti, expires_at)

    async def is_revoked(self, jti: str) -> bool:
        """Whether the token ``jti`` was revoked."""
        reader = self.database.inline_reader
        if reader is not None and self.database.joined() is None:
            with contextlib.suppress(sqlite3.Error):
                return bool(reader.execute(_SQLITE_IS_REVOKED, (jti,)).fetchall())
        return await self.database.read(accounts.revocation_exists, jti)

    async def event_log_size(self) -> tuple[int, int]:
        """How many events the log keeps, and its newest revision."""
        return await self.database.read(_log_bounds)

    async def purge_expired_revocations(self, *, now: datetime | None = None) -> int:
        """Forget revocations of tokens that have expired anyway; returns how many."""
        return await self.database.write(accounts.delete_expired_revocations, now or utc_now())


# Every operation is timed (portico_store_operation_duration_seconds{operation}) and traced
# inside a traced call; transaction steps as "transaction.<name>".
instrument(ObjectStore, skip=frozenset({"close"}))
instrument(Transaction, prefix="transaction.")
