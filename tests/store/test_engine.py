"""Engine creation: URL normalisation, the SQLite file's directory, and its WAL mode."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from app.store import normalize_url
from app.store.engine import create_store_engine, open_sqlite_connection


@pytest.mark.parametrize(
    ("given", "driver"),
    [
        ("postgresql://u:p@db.example:5432/portico", "postgresql+psycopg"),
        ("postgres://u:p@db.example/portico", "postgresql+psycopg"),
        ("postgresql+psycopg://u:p@db.example/portico", "postgresql+psycopg"),
        ("sqlite:///data/portico.db", "sqlite"),
    ],
)
def test_plain_postgresql_urls_use_psycopg_3(given, driver):
    url = normalize_url(given)
    assert url.drivername == driver
    assert url.database in {"portico", "data/portico.db"}


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_an_in_memory_sqlite_database_is_refused(url):
    with pytest.raises(ValueError, match="SQLite file"):
        normalize_url(url)


def test_the_sqlite_files_directory_is_created(tmp_path):
    engine = create_store_engine(f"sqlite:///{tmp_path / 'fresh' / 'data' / 'portico.db'}")
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
    finally:
        engine.dispose()
    assert (tmp_path / "fresh" / "data" / "portico.db").is_file()


def test_a_connection_opened_while_another_process_writes_a_new_database_waits_for_it(tmp_path):
    """Workers starting together on a new database: one holds its first write transaction
    while the database is not yet in WAL mode, and SQLite refuses another's switch to WAL at
    once (no busy wait, which could deadlock). The second waits and gets WAL mode instead of
    dying with "database is locked"."""
    path = tmp_path / "portico.db"
    first = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    first.execute("CREATE TABLE t (x INTEGER)")
    first.execute("BEGIN IMMEDIATE")
    first.execute("INSERT INTO t VALUES (1)")
    threading.Timer(0.3, first.execute, ("COMMIT",)).start()
    engine = create_store_engine(f"sqlite:///{path}")
    try:
        second = open_sqlite_connection(engine, busy_timeout=0.0)
        assert second.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert second.execute("SELECT x FROM t").fetchall() == [(1,)]
        second.close()
    finally:
        engine.dispose()
        first.close()
