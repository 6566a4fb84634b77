"""Stored objects and the statements that read and write them, run inside a transaction.

Each write appends to the event log and gives the object the event's revision. On SQLite the
hot statements go straight to the ``sqlite3`` connection: they run on the event loop inside a
write transaction (see ``runner``), where SQLAlchemy's per-statement work cost five times the
statement itself. PostgreSQL goes through SQLAlchemy Core, whose cost hides behind the round trip.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, Self, TypeVar

from sqlalchemy import Connection, bindparam, delete, insert, select, update
from sqlalchemy.dialects import postgresql as postgresql_dialect

from app.store.engine import sqlite_connection
from app.store.errors import AlreadyExists, Conflict, NotFound
from app.store.indexes import keys_where, reindex
from app.store.tables import (
    EventLogEntry,
    StoredObject,
    core_table,
    inserted_id,
    sqlite_text,
    sqlite_time,
)
from app.store.watch import Event, EventType

_objects = core_table(StoredObject)
_log = core_table(EventLogEntry)
_RECORD_COLUMNS = (
    _objects.c.kind,
    _objects.c.key,
    _objects.c.data,
    _objects.c.revision,
    _objects.c.created_at,
    _objects.c.updated_at,
)
SQLITE_GET = (
    'SELECT data, revision, created_at, updated_at FROM stored_object WHERE kind = ? AND "key" = ?'
)
_SQLITE_LIST = (
    'SELECT "key", data, revision, created_at, updated_at FROM stored_object '
    'WHERE kind = ? AND "key" >= ?'
)
_SQLITE_APPEND = 'INSERT INTO event_log (kind, "key", type, data, "at") VALUES (?, ?, ?, ?, ?)'
# A key already taken inserts nothing (rowcount 0) instead of failing the transaction.
_SQLITE_INSERT = (
    'INSERT INTO stored_object (kind, "key", data, revision, created_at, updated_at) '
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
_SQLITE_UPDATE = (
    'UPDATE stored_object SET data = ?, revision = ?, updated_at = ? WHERE kind = ? AND "key" = ?'
)
_SQLITE_DELETE = 'DELETE FROM stored_object WHERE kind = ? AND "key" = ?'
_SQLITE_TAKE_BACK = "DELETE FROM event_log WHERE revision = ?"


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


def as_bytes(data: bytes | Message) -> bytes:
    """The stored form of ``data``."""
    if isinstance(data, bytes):
        return data
    # Deterministic: equal messages give equal bytes, so an unchanged update is recognised.
    return data.SerializeToString(deterministic=True)


def _record(row: Any) -> Record:
    return Record(row.kind, row.key, row.data, row.revision, row.created_at, row.updated_at)


def event_of(record: Record, type_: EventType) -> Event:
    """The event log entry a write of ``record`` appended (a deletion keeps the last data)."""
    return Event(record.revision, record.kind, record.key, type_, record.data, record.updated_at)


def _prefix_upper_bound(prefix: str) -> str | None:
    # Keys compare by code point on both backends, so [prefix, bound) holds exactly the matches.
    for cut in range(len(prefix), 0, -1):
        point = ord(prefix[cut - 1]) + 1
        if 0xD800 <= point <= 0xDFFF:
            point = 0xE000
        if point <= 0x10FFFF:
            return prefix[: cut - 1] + chr(point)
    return None


# Built once: constructing a statement per call costs more than a local PostgreSQL round trip.
_SELECT_RECORD = select(*_RECORD_COLUMNS).where(
    _objects.c.kind == bindparam("kind"), _objects.c.key == bindparam("key")
)
_INSERT_EVENT = insert(_log)
_INSERT_NEW_OBJECT = (
    postgresql_dialect.insert(_objects).on_conflict_do_nothing().returning(_objects.c.kind)
)
_DELETE_EVENT = delete(_log).where(_log.c.revision == bindparam("revision"))
# Bound names differ from the columns: those names are taken by the SET clause's values.
_UPDATE_OBJECT = update(_objects).where(
    _objects.c.kind == bindparam("of_kind"), _objects.c.key == bindparam("of_key")
)
_DELETE_OBJECT = delete(_objects).where(
    _objects.c.kind == bindparam("kind"), _objects.c.key == bindparam("key")
)


def sqlite_record(kind: str, key: str, rows: list[Any]) -> Record | None:
    """The object ``(kind, key)`` from the rows ``SQLITE_GET`` gave, if any."""
    if not rows:
        return None
    data, revision, created_at, updated_at = rows[0]
    return Record(kind, key, data, revision, sqlite_time(created_at), sqlite_time(updated_at))


def select_record(conn: Connection, kind: str, key: str) -> Record | None:
    """The object ``(kind, key)``, if any."""
    raw = sqlite_connection(conn)
    if raw is not None:
        return sqlite_record(kind, key, raw.execute(SQLITE_GET, (kind, key)).fetchall())
    row = conn.execute(_SELECT_RECORD, {"kind": kind, "key": key}).first()
    return None if row is None else _record(row)


def select_records(conn: Connection, kind: str, prefix: str) -> list[Record]:
    """Objects of ``kind`` whose key starts with ``prefix``, ordered by key."""
    bound = _prefix_upper_bound(prefix) if prefix else None
    raw = sqlite_connection(conn)
    if raw is not None:
        sql, args = _SQLITE_LIST, [kind, prefix]
        if bound is not None:
            sql, args = f'{sql} AND "key" < ?', [kind, prefix, bound]
        return [
            Record(kind, key, data, revision, sqlite_time(created), sqlite_time(updated))
            for key, data, revision, created, updated in raw.execute(f'{sql} ORDER BY "key"', args)
        ]
    query = select(*_RECORD_COLUMNS).where(_objects.c.kind == kind).order_by(_objects.c.key)
    if prefix:
        query = query.where(_objects.c.key >= prefix)
        if bound is not None:
            query = query.where(_objects.c.key < bound)
    return [_record(row) for row in conn.execute(query)]


def _append_event(
    conn: Connection, kind: str, key: str, type_: EventType, data: bytes, now: datetime
) -> int:
    raw = sqlite_connection(conn)
    if raw is not None:
        cursor = raw.execute(_SQLITE_APPEND, (kind, key, type_.value, data, sqlite_text(now)))
        return int(cursor.lastrowid or 0)
    values = {"kind": kind, "key": key, "type": type_.value, "data": data, "at": now}
    return inserted_id(conn.execute(_INSERT_EVENT, values))


def insert_record(conn: Connection, kind: str, key: str, data: bytes, now: datetime) -> Record:
    """Create an object; ``AlreadyExists`` if the key is taken.

    Two statements, no read first: the event takes the next revision, and the object's insert
    does nothing if the key is taken (then the event is taken back: that revision is never
    committed).
    """
    revision = _append_event(conn, kind, key, EventType.CREATED, data, now)
    raw = sqlite_connection(conn)
    if raw is not None:
        at = sqlite_text(now)
        inserted = raw.execute(_SQLITE_INSERT, (kind, key, data, revision, at, at)).rowcount == 1
        if not inserted:
            raw.execute(_SQLITE_TAKE_BACK, (revision,))
    else:
        values = {
            "kind": kind,
            "key": key,
            "data": data,
            "revision": revision,
            "created_at": now,
            "updated_at": now,
        }
        inserted = conn.execute(_INSERT_NEW_OBJECT, values).first() is not None
        if not inserted:
            conn.execute(_DELETE_EVENT, {"revision": revision})
    if not inserted:
        raise AlreadyExists(f"{kind} {key!r} already exists")
    reindex(conn, kind, key, None, data)
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
    raw = sqlite_connection(conn)
    if raw is not None:
        raw.execute(_SQLITE_UPDATE, (data, revision, sqlite_text(now), kind, key))
    else:
        values = {
            "of_kind": kind,
            "of_key": key,
            "data": data,
            "revision": revision,
            "updated_at": now,
        }
        conn.execute(_UPDATE_OBJECT, values)
    reindex(conn, kind, key, current.data, data)
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
    raw = sqlite_connection(conn)
    if raw is not None:
        raw.execute(_SQLITE_DELETE, (kind, key))
    else:
        conn.execute(_DELETE_OBJECT, {"kind": kind, "key": key})
    reindex(conn, kind, key, current.data, None)
    return Record(kind, key, current.data, revision, current.created_at, now)


def select_where(conn: Connection, kind: str, name: str, value: str) -> list[Record]:
    """The ``kind`` objects whose index ``name`` holds ``value`` (app.store.indexes), by key."""
    found = (select_record(conn, kind, key) for key in keys_where(conn, kind, name, value))
    return [record for record in found if record is not None]
