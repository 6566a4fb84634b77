"""Counters: named integers kept beside the objects, changed inside a write transaction by one
statement and with no event.

They hold bookkeeping that saves a scan (a sum over objects) and that no reader of the event
log follows: writing one as an object cost a read, an update and an event per change.
"""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, insert, select, update

from app.store.engine import sqlite_connection
from app.store.tables import StoreMeta, core_table

_meta = core_table(StoreMeta)

_SQLITE_READ = "SELECT value FROM store_meta WHERE name = ?"
_SQLITE_ADD = "UPDATE store_meta SET value = value + ? WHERE name = ? RETURNING value"
_SQLITE_UPDATE = "UPDATE store_meta SET value = ? WHERE name = ?"
_SQLITE_INSERT = "INSERT INTO store_meta (name, value) VALUES (?, ?)"
# Built once, as the object statements are (records.py).
_READ = select(_meta.c.value).where(_meta.c.name == bindparam("counter"))
_ADD = (
    update(_meta)
    .where(_meta.c.name == bindparam("counter"))
    .values(value=_meta.c.value + bindparam("delta"))
    .returning(_meta.c.value)
)
_UPDATE = update(_meta).where(_meta.c.name == bindparam("counter")).values(value=bindparam("to"))
_INSERT = insert(_meta)


def read_counter(conn: Connection, name: str) -> int | None:
    """The counter ``name``, or None if it was never set."""
    raw = sqlite_connection(conn)
    if raw is not None:
        row = raw.execute(_SQLITE_READ, (name,)).fetchone()
        return None if row is None else int(row[0])
    value = conn.execute(_READ, {"counter": name}).scalar()
    return None if value is None else int(value)


def add_to_counter(conn: Connection, name: str, delta: int) -> int | None:
    """Add ``delta`` to the counter ``name`` and return its new value; None (and nothing
    changed) if it was never set."""
    raw = sqlite_connection(conn)
    if raw is not None:
        row = raw.execute(_SQLITE_ADD, (delta, name)).fetchone()
        return None if row is None else int(row[0])
    value = conn.execute(_ADD, {"counter": name, "delta": delta}).scalar()
    return None if value is None else int(value)


def set_counter(conn: Connection, name: str, value: int) -> None:
    """Set the counter ``name`` to ``value``, starting it if it was never set. Writers are
    serialised, so no other can start it between the update and the insert."""
    raw = sqlite_connection(conn)
    if raw is not None:
        if raw.execute(_SQLITE_UPDATE, (value, name)).rowcount == 0:
            raw.execute(_SQLITE_INSERT, (name, value))
    elif conn.execute(_UPDATE, {"counter": name, "to": value}).rowcount == 0:
        conn.execute(_INSERT, {"name": name, "value": value})
