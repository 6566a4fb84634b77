"""SQLAlchemy engines for the store: SQLite in a file (default) or PostgreSQL via psycopg 3."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url

DEFAULT_BUSY_TIMEOUT = 5.0
_WAL_RETRY_SECONDS = 0.01


def normalize_url(url: str | URL) -> URL:
    """Parse a database URL, choosing the psycopg 3 driver for plain ``postgresql://`` URLs."""
    parsed = make_url(url)
    if parsed.drivername in {"postgresql", "postgres"}:
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() == "sqlite" and parsed.database in {None, "", ":memory:"}:
        # Every pooled connection would see its own empty database.
        raise ValueError("the store needs a SQLite file, not an in-memory database")
    return parsed


def is_sqlite(engine: Engine) -> bool:
    """Whether the engine talks to SQLite."""
    return engine.dialect.name == "sqlite"


def sqlite_connection(conn: Connection) -> sqlite3.Connection | None:
    """The ``sqlite3`` connection under ``conn``, or None on another database."""
    raw = conn.connection.dbapi_connection
    return raw if isinstance(raw, sqlite3.Connection) else None


def configure_sqlite_connection(dbapi_connection: sqlite3.Connection, busy_timeout: float) -> None:
    """Apply the pragmas every store connection to SQLite needs."""
    # The store issues BEGIN/COMMIT itself (BEGIN IMMEDIATE for writes), so the driver must not.
    dbapi_connection.isolation_level = None
    _switch_to_wal(dbapi_connection)
    dbapi_connection.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
    dbapi_connection.execute("PRAGMA foreign_keys=ON")
    # FULL fsyncs the WAL on every commit: an acknowledged write survives a power cut.
    dbapi_connection.execute("PRAGMA synchronous=FULL")


def is_busy(error: sqlite3.OperationalError) -> bool:
    """SQLite's busy, by its primary code: any of its extended kinds (recovery, snapshot) too."""
    return error.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY


def _switch_to_wal(dbapi_connection: sqlite3.Connection) -> None:
    # Workers starting together on a new database: while one holds its first write transaction
    # and the file is not in WAL mode yet, SQLite refuses another's switch at once, with no
    # busy wait (it could deadlock); that worker died with "database is locked". Ask again
    # until the writer is done, as long as a busy wait would have waited.
    deadline = time.monotonic() + DEFAULT_BUSY_TIMEOUT
    while True:
        try:
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() > deadline:
                raise
        time.sleep(_WAL_RETRY_SECONDS)


def open_sqlite_connection(engine: Engine, busy_timeout: float) -> sqlite3.Connection:
    """A plain sqlite3 connection to the engine's file, configured like the pooled ones."""
    connection = sqlite3.connect(
        engine.url.database or "", check_same_thread=False, isolation_level=None
    )
    configure_sqlite_connection(connection, busy_timeout)
    return connection


def make_private_folder(path: Path) -> None:
    """Create ``path`` if needed and make it the owner's alone (0700): it holds secrets."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(PermissionError):  # not ours to change; the owner chose its mode
        path.chmod(0o700)


def make_private_database(path: Path) -> None:
    """Create the SQLite file as 0600 before SQLite does (its WAL and shared-memory files take
    the database's mode), and tighten the files an older start left readable by others."""
    if not path.parent.exists():
        make_private_folder(path.parent)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for companion in ("", "-wal", "-shm", ".write-lock"):
        with contextlib.suppress(FileNotFoundError, PermissionError):
            os.chmod(f"{path}{companion}", 0o600)


def create_store_engine(
    url: str | URL,
    *,
    pool_size: int = 10,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
) -> Engine:
    """An engine for ``url`` in autocommit mode; the store begins its own transactions."""
    parsed = normalize_url(url)
    options: dict[str, Any] = {
        "isolation_level": "AUTOCOMMIT",
        "pool_size": pool_size,
        "max_overflow": pool_size,
        "pool_timeout": busy_timeout,
    }
    if parsed.get_backend_name() == "sqlite":
        make_private_database(Path(parsed.database or "").expanduser())
        options["connect_args"] = {"check_same_thread": False, "timeout": busy_timeout}
        engine = create_engine(parsed, **options)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
            configure_sqlite_connection(dbapi_connection, busy_timeout)

        return engine

    lock_timeout_ms = int(busy_timeout * 1000)
    # No pre-ping: it would double the round trips of every read; a dropped connection is
    # invalidated by SQLAlchemy on first error and reported as UNAVAILABLE once.
    options["connect_args"] = {
        "connect_timeout": max(1, int(busy_timeout)),
        # A writer waits at most this long for the write lock before reporting UNAVAILABLE.
        "options": _merge_pg_options(parsed, f"-c lock_timeout={lock_timeout_ms}"),
    }
    parsed = parsed.difference_update_query(["options"])
    return create_engine(parsed, **options)


def _merge_pg_options(url: URL, extra: str) -> str:
    existing = url.query.get("options", "")
    if isinstance(existing, tuple):
        existing = " ".join(existing)
    return f"{existing} {extra}".strip()
