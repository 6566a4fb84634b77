"""``portico backup FILE``: a consistent copy of the SQLite database while the server runs.

SQLite's online backup API copies the database as one read transaction sees it. In WAL mode a
reader never blocks the server's writers (nor they it), so the copy is taken in one step: taken
in several, every write of the server between two steps (its simulation writes every second)
would start the copy again from the first page. PostgreSQL has its own tool, ``pg_dump``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from app.settings.config import Settings

# The busy timeout of the copy's read: a reader waits only while a checkpoint resets the log.
BUSY_TIMEOUT_MS = 10_000


class BackupError(Exception):
    """Why no backup was made, as one line."""


def add_backup_command(commands: Any, data_dir: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``portico backup FILE [--data-dir D]``: its parser."""
    backup = commands.add_parser(
        "backup",
        parents=[data_dir],
        help="copy the SQLite database to FILE, also while the server runs",
        description=(
            "Copy the SQLite database (PORTICO_DATA_DIR/portico.db, or PORTICO_DATABASE_URL's "
            "file) to FILE as one consistent snapshot, using SQLite's online backup; the server "
            "keeps serving and writing meanwhile. FILE must not exist. Restore by stopping the "
            "server and putting FILE in the database's place. For PostgreSQL use pg_dump."
        ),
    )
    backup.add_argument("file", type=Path, help="where the copy goes (a new file)")
    return backup


def sqlite_file(settings: Settings) -> Path:
    """The SQLite file of ``settings``; a BackupError for PostgreSQL or a missing file."""
    url = make_url(settings.effective_database_url)
    if url.get_backend_name() != "sqlite":
        raise BackupError(
            "the database is PostgreSQL (PORTICO_DATABASE_URL): back it up with pg_dump, "
            'e.g. pg_dump --format=custom --file=portico.dump "$PORTICO_DATABASE_URL"'
        )
    path = Path(url.database or "")
    if not path.is_file():
        raise BackupError(f"no database at {path}: is PORTICO_DATA_DIR (or --data-dir) right?")
    return path


def backup(source: Path, target: Path) -> str:
    """Copy ``source`` to the new file ``target`` (mode 0600: it holds password hashes); the
    line that says what was copied."""
    if target.exists():
        raise BackupError(f"{target} exists already: name a new file")
    if target.resolve() == source.resolve():
        raise BackupError(f"{target} is the database itself")
    partial = target.with_name(f".{target.name}.partial")
    started = time.monotonic()
    try:
        with contextlib.closing(_connect(source, "rw")) as reader:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.close(fd)
            with contextlib.closing(sqlite3.connect(partial)) as copy:
                reader.backup(copy)
                pages = copy.execute("PRAGMA page_count").fetchone()[0]
                page_size = copy.execute("PRAGMA page_size").fetchone()[0]
                check = copy.execute("PRAGMA quick_check").fetchone()[0]
                version = copy.execute("SELECT max(version) FROM schema_version").fetchone()[0]
                # One file, the log folded in: nothing beside it is needed to restore.
                copy.execute("PRAGMA journal_mode=DELETE")
        if check != "ok":
            raise BackupError(f"the copy failed SQLite's check: {check}")
        _sync(partial)
        os.replace(partial, target)
        _sync(target.parent)
    except (sqlite3.Error, OSError) as exc:
        raise BackupError(f"cannot copy {source} to {target}: {exc}") from None
    finally:
        partial.unlink(missing_ok=True)
    seconds = time.monotonic() - started
    mib = pages * page_size / 2**20
    return (
        f"backed up {source} to {target}: {mib:.1f} MiB ({pages} pages), schema version "
        f"{version}, checked, in {seconds:.2f} s"
    )


def _connect(path: Path, mode: str) -> sqlite3.Connection:
    # mode=rw: never create a database where none was.
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True)
    connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return connection


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def run(settings: Settings, target: Path) -> None:
    """The command: print what was copied, or exit with why not."""
    try:
        line = backup(sqlite_file(settings), target)
    except BackupError as exc:
        raise SystemExit(f"portico: {exc}") from None
    print(line, file=sys.stdout, flush=True)
