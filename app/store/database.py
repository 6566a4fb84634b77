"""Running blocking database work from asyncio: a small thread pool, serialised write transactions.

Every write transaction takes one global write lock first (``BEGIN IMMEDIATE`` on SQLite, a
transaction-level advisory lock on PostgreSQL). Serialised writers make the event log's revision
order the commit order, so a watcher that has read revision N can never later meet a smaller one.
Concurrent writers of a process share that transaction and its commit (:mod:`group_commit`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import fcntl
import functools
import hashlib
import itertools
import logging
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine

from app.observe.metrics import RECORDING, WRITE_LOCK_SECONDS
from app.store.engine import (
    DEFAULT_BUSY_TIMEOUT,
    is_busy,
    is_sqlite,
    open_sqlite_connection,
    sqlite_connection,
)
from app.store.errors import Unavailable
from app.store.group_commit import DEFAULT_MAX_MEMBERS, DEFAULT_MAX_SECONDS, GroupCommit
from app.store.runner import (
    TransactionRunner,
    call_mapped,
    execute,
    rollback_quietly,
)

T = TypeVar("T")

# Inline reads run on the event loop, so they must never wait for a lock: a busy database
# (a checkpoint, another process's recovery) sends them to the pool instead.
_INLINE_BUSY_TIMEOUT = 0.0
# How long closing waits for a write turn to end before it closes regardless.
CLOSE_WAIT_SECONDS = 5.0
# A writer waiting for SQLite's write lock (another process holds it) waits in slices this long,
# checking between them whether the store is closing: one wait of the whole busy timeout on a
# thread kept a stopping server alive after its grace.
_BUSY_SLICE_SECONDS = 0.05
log = logging.getLogger("portico.store")
_DATABASE_LOCK_WAIT = WRITE_LOCK_SECONDS.labels("database")

# The transaction every store call of this task joins, while :meth:`Database.ambient` runs one
# (a call with an idempotency key: its writes and its recorded outcome commit together).
_joined: contextvars.ContextVar[TransactionRunner | None] = contextvars.ContextVar(
    "portico_store_joined", default=None
)


def advisory_lock_key(name: str, namespace: str) -> int:
    """A stable signed 64-bit PostgreSQL advisory lock key for ``name`` within a schema."""
    digest = hashlib.blake2b(f"{namespace}\0{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class Database:
    """An engine plus the thread pool and locks that let coroutines use it safely.

    ``group_max_members`` and ``group_max_seconds`` bound how many write transactions share
    one commit and how long the first of them waits for it (:mod:`group_commit`).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        workers: int = 8,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        group_max_members: int = DEFAULT_MAX_MEMBERS,
        group_max_seconds: float = DEFAULT_MAX_SECONDS,
    ) -> None:
        self.engine = engine
        self.is_sqlite = is_sqlite(engine)
        self.namespace = call_mapped(self._query_namespace)
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="store")
        # One write transaction per process at a time, and those that queue share a commit.
        self._group = GroupCommit(
            self._checkout_and_begin,
            self._commit_and_close,
            self._executor,
            inline_steps=self.is_sqlite,
            max_members=group_max_members,
            max_seconds=group_max_seconds,
        )
        self._closed = False
        # Set on close: writers waiting for a lock on threads give up (see _BUSY_SLICE_SECONDS).
        self._closing = threading.Event()
        self._busy_timeout = busy_timeout
        self._write_key = advisory_lock_key("portico.store.write", self.namespace)
        self._file_lock = (
            WriterQueue(f"{engine.url.database}.write-lock", busy_timeout, self._closing)
            if self.is_sqlite
            else None
        )
        # SQLite point reads take microseconds in WAL mode (readers never wait for writers),
        # far less than a hop to a worker thread, so the hot reads run on the loop itself.
        self.inline_reader: sqlite3.Connection | None = (
            open_sqlite_connection(engine, _INLINE_BUSY_TIMEOUT) if self.is_sqlite else None
        )

    def _query_namespace(self) -> str:
        if self.is_sqlite:
            return ""
        with self.engine.connect() as conn:
            return str(conn.exec_driver_sql("SELECT current_schema()").scalar() or "")

    def begin_write(self, conn: Connection) -> None:
        """Open a write transaction on ``conn`` holding the global write lock.

        Pair with :meth:`end_write` once the transaction has committed or rolled back.
        """
        started = time.perf_counter()
        if self._file_lock is None:
            conn.exec_driver_sql(f"BEGIN; SELECT pg_advisory_xact_lock({self._write_key})")
            _waited(_DATABASE_LOCK_WAIT, started)
            return
        self._file_lock.acquire()
        _waited(_DATABASE_LOCK_WAIT, started)
        try:
            self._begin_immediate(conn)
        except BaseException:
            self._file_lock.release()
            raise

    def _begin_immediate(self, conn: Connection) -> None:
        """``BEGIN IMMEDIATE``, waiting up to the busy timeout for another process's write to
        end, but giving up as soon as the store closes."""
        raw = sqlite_connection(conn)
        assert raw is not None
        deadline = time.monotonic() + self._busy_timeout
        raw.execute(f"PRAGMA busy_timeout={int(_BUSY_SLICE_SECONDS * 1000)}")
        try:
            while True:
                try:
                    raw.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as exc:
                    if not is_busy(exc) or time.monotonic() >= deadline:
                        raise
                if self._closing.is_set():
                    raise Unavailable("the store is closed (server shutting down)")
        finally:
            raw.execute(f"PRAGMA busy_timeout={int(self._busy_timeout * 1000)}")

    def end_write(self) -> None:
        """Let the next writer (of any process) in; PostgreSQL's lock ended with the transaction."""
        if self._file_lock is not None:
            self._file_lock.release()

    @property
    def writing(self) -> bool:
        """Whether a write of this process is under way or has just committed and its writer
        has not yet been told (it is about to tell watchers what it wrote)."""
        return self._group.writing > 0

    @property
    def callers_waiting(self) -> bool:
        """Whether a caller's write (not background work's) waits for its turn: work on the
        event loop that background work should give way to, though the loop may look idle
        meanwhile (the turn ahead may be a commit on a thread)."""
        return self._group.callers_waiting()

    def joined(self) -> TransactionRunner | None:
        """The ambient transaction this task's store calls join, if one is open."""
        runner = _joined.get()
        # A task the call spawned keeps the variable after the transaction ended: not joined.
        return runner if runner is not None and runner.conn is not None else None

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once what was just written is committed: now, or when the ambient
        transaction commits (never, if it rolls back)."""
        runner = self.joined()
        if runner is None:
            callback()
        else:
            runner.committed.append(callback)

    @contextlib.asynccontextmanager
    async def ambient(self) -> AsyncIterator[TransactionRunner]:
        """One write transaction that every read, write and transaction of this task (and of
        tasks it starts meanwhile) joins until the block ends; commits on success."""
        async with self.transaction() as runner:
            token = _joined.set(runner)
            try:
                yield runner
            finally:
                _joined.reset(token)
        for callback in runner.committed:
            callback()

    def read_inline(self, sql: str, args: tuple[Any, ...]) -> list[Any] | None:
        """The rows of one SQLite query run on the loop (microseconds, no thread hop), or None
        where it must go the pooled way (:meth:`read`): on PostgreSQL, inside an ambient
        transaction (whose writes it would not see), or when SQLite is busy or broken (the
        pooled path waits properly and maps the error)."""
        reader = self.inline_reader
        if reader is None or self.joined() is not None:
            return None
        try:
            return reader.execute(sql, args).fetchall()
        except sqlite3.Error:
            return None

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(connection, *args)`` on a worker thread outside any explicit transaction."""
        self._check_open()
        runner = self.joined()
        if runner is not None:
            return await runner.run(fn, *args)  # read what the ambient transaction wrote
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, functools.partial(call_mapped, self._read_sync, fn, *args)
        )

    def _read_sync(self, fn: Callable[..., T], *args: Any) -> T:
        with self.engine.connect() as conn:
            return fn(conn, *args)

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(connection, *args)`` as one write transaction; returns once it is durable."""
        self._check_open()
        runner = self.joined()
        if runner is not None:
            return await runner.run(_in_savepoint, runner.savepoint_name(), fn, *args)
        async with self._group.turn() as runner:
            return await runner.run(fn, *args)

    def transaction(self) -> contextlib.AbstractAsyncContextManager[TransactionRunner]:
        """A write transaction kept open across awaits; commits on success (the block's exit
        returns once it is durable), else rolls back.

        Inside an ambient transaction it is a savepoint of that one instead. (The block of the
        one or the other itself: every write passes here, and a layer of context manager
        around it cost more than a statement.)"""
        self._check_open()
        joined = self.joined()
        if joined is not None:
            return _savepoint(joined)
        return self._group.turn()

    def _check_open(self) -> None:
        if self._closed:
            raise Unavailable("the store is closed (server shutting down)")

    def _checkout_and_begin(self) -> Connection:
        conn = self.engine.connect()
        try:
            self.begin_write(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _commit_and_close(self, conn: Connection, commit: bool) -> None:
        try:
            if commit:
                conn.exec_driver_sql("COMMIT")
            else:
                rollback_quietly(conn)
        except BaseException:
            rollback_quietly(conn)
            raise
        finally:
            self.end_write()
            conn.close()

    async def close(self) -> None:
        """Refuse new calls, let the writers already queued take their turns, then close every
        connection.

        The wait for those turns is bounded: a caller holding a transaction open across an
        await that never returns must not keep the store (and the server stopping) open for
        ever; the commits already running on threads are still waited for below."""
        self._closed = True  # no new writer queues from now on
        self._closing.set()  # and those waiting for another process's write stop waiting
        try:
            async with asyncio.timeout(CLOSE_WAIT_SECONDS):
                await self._group.close()
        except TimeoutError:
            log.warning(
                "closing the store: a write turn did not end within %ss", CLOSE_WAIT_SECONDS
            )
        await asyncio.get_running_loop().run_in_executor(None, self.close_now)

    def close_now(self) -> None:
        """Close from synchronous code, blocking until running work is done."""
        self._closed = True
        self._closing.set()
        self._executor.shutdown(wait=True)
        if self.inline_reader is not None:
            self.inline_reader.close()
            self.inline_reader = None
        if self._file_lock is not None:
            self._file_lock.close()
            self._file_lock = None
        self.engine.dispose()


class WriterQueue:
    """The order in which processes sharing one SQLite file write: a lock on a file beside it.

    SQLite's busy handler lets a waiting writer sleep up to 100 ms between tries, so with several
    worker processes one of them could lose the race for the database again and again (write
    p99 over a second under load). Waiting here instead, polling every millisecond or so, a
    writer gets in soon after the lock is free. The kernel drops the lock if a process dies.
    Within a process the store's own lock already lets one writer through at a time.
    """

    _POLL_SECONDS = (0.0002, 0.0005, 0.001)

    def __init__(self, path: str, timeout: float, closing: threading.Event) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self._timeout = timeout
        self._closing = closing

    def acquire(self) -> None:
        """Take the lock, waiting up to the busy timeout; Unavailable after that, or at once
        when the store closes meanwhile."""
        deadline = time.monotonic() + self._timeout
        for attempt in itertools.count():
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Unavailable("database is busy (another writer); retry shortly") from None
                if self._closing.is_set():
                    raise Unavailable("the store is closed (server shutting down)") from None
                time.sleep(self._POLL_SECONDS[min(attempt, len(self._POLL_SECONDS) - 1)])

    def release(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self._fd)


def _waited(histogram: Any, started: float) -> None:
    if RECORDING.on:
        histogram.observe(time.perf_counter() - started)


def _in_savepoint(conn: Connection, name: str, fn: Callable[..., T], *args: Any) -> T:
    """``fn(conn, *args)`` undone alone if it fails, as a write of its own would be."""
    conn.exec_driver_sql(f"SAVEPOINT {name}")
    try:
        result = fn(conn, *args)
    except BaseException:
        conn.exec_driver_sql(f"ROLLBACK TO SAVEPOINT {name}")
        raise
    finally:
        conn.exec_driver_sql(f"RELEASE SAVEPOINT {name}")
    return result


@contextlib.asynccontextmanager
async def _savepoint(runner: TransactionRunner) -> AsyncIterator[TransactionRunner]:
    """A transaction nested in an ambient one: its writes are undone alone if the block fails."""
    name = runner.savepoint_name()
    await runner.run(execute, f"SAVEPOINT {name}")
    try:
        yield runner
    except BaseException:
        await runner.run(execute, f"ROLLBACK TO SAVEPOINT {name}")
        raise
    finally:
        await runner.run(execute, f"RELEASE SAVEPOINT {name}")
