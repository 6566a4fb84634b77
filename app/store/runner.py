"""Running the steps of one open write transaction from asyncio, and mapping driver errors."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

import psycopg
from sqlalchemy import Connection
from sqlalchemy import exc as sa_exc

from app.store.engine import sqlite_connection
from app.store.errors import StoreError, map_database_error

P = ParamSpec("P")
T = TypeVar("T")

# A transaction whose steps run on the loop gives other callers a turn after this much of them.
INLINE_TURN_SECONDS = 0.005

DRIVER_ERRORS = (sa_exc.DBAPIError, sa_exc.TimeoutError, sqlite3.Error, psycopg.Error)


def call_mapped(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Call ``fn``, turning driver exceptions into store errors at this boundary."""
    try:
        return fn(*args, **kwargs)
    except StoreError:
        raise
    except DRIVER_ERRORS as exc:
        mapped = map_database_error(exc)
        if mapped is None:
            raise
        raise mapped from exc


def execute(conn: Connection, sql: str) -> None:
    """Run one statement that returns nothing (savepoints, transaction control)."""
    raw = sqlite_connection(conn)
    if raw is not None:
        raw.execute(sql)  # on the loop, where SQLAlchemy's own work costs more than this
    else:
        conn.exec_driver_sql(sql)


def rollback_quietly(conn: Connection) -> None:
    """Roll back whatever transaction ``conn`` has open, if any."""
    # The transaction may already be gone (failed BEGIN, lost connection); nothing to undo then.
    # A connection the server ended mid-COMMIT (a database restarting) is one SQLAlchemy holds
    # invalid until rolled back at its own level: its ROLLBACK raised PendingRollbackError, which
    # took the place of the COMMIT's error and answered the call INTERNAL instead of UNAVAILABLE.
    with contextlib.suppress(*DRIVER_ERRORS, sa_exc.PendingRollbackError):
        conn.exec_driver_sql("ROLLBACK")


class TransactionRunner:
    """Runs steps of one logical write transaction, one at a time, on its group's connection.

    With ``inline_steps`` (SQLite) the statements run on the event loop: the write lock is
    already held, so they never wait on another connection, and they take microseconds, where
    each hop to a thread and back costs more than the statement and kept every other writer
    queued behind it. Otherwise (PostgreSQL, a network round trip each) they run on a worker
    thread. ``opening`` is a savepoint the first step creates before its own work (no extra hop).
    """

    def __init__(
        self, executor: ThreadPoolExecutor, *, inline_steps: bool = False, opening: str = ""
    ) -> None:
        self.conn: Connection | None = None
        # What to run once the transaction commits (see Database.after_commit).
        self.committed: list[Callable[[], None]] = []
        self.opened = False  # whether ``opening``'s savepoint exists yet
        self._opening = opening
        self._savepoints = itertools.count(1)
        # Steps of an ambient transaction may come from several tasks; one at a time.
        self._step = asyncio.Lock()
        self._executor = executor
        self._inline_steps = inline_steps
        self._pending: asyncio.Future[Any] | None = None
        self._turn_started = time.monotonic()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(connection, *args)`` inside the transaction."""
        if self._inline_steps:
            result = call_mapped(self._with_conn, fn, *args)
            # Each step is short, but a transaction of thousands would hold the loop for
            # seconds: every few milliseconds of them, other callers get a turn (other writers
            # still wait for the write lock, readers never do).
            now = time.monotonic()
            if now - self._turn_started > INLINE_TURN_SECONDS:
                await asyncio.sleep(0)
                self._turn_started = time.monotonic()
            return result
        async with self._step:
            return await self.run_sync(self._with_conn, fn, *args)

    def run_now(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(connection, *args)`` at once, on this thread (inline steps only)."""
        return self._with_conn(fn, *args)

    def savepoint_name(self) -> str:
        """A savepoint name not used before in this transaction."""
        return f"portico_{next(self._savepoints)}"

    def _with_conn(self, fn: Callable[..., T], *args: Any) -> T:
        assert self.conn is not None, "transaction is not open"
        if self._opening and not self.opened:
            execute(self.conn, f"SAVEPOINT {self._opening}")
            self.opened = True
        return fn(self.conn, *args)

    async def run_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on a worker thread, as the transaction's only work in flight."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._executor, functools.partial(call_mapped, fn, *args))
        self._pending = future
        # Shielded: if the caller is cancelled the thread still owns the connection until done.
        return await asyncio.shield(future)

    @property
    def settled(self) -> bool:
        """Whether no step of this transaction is running on a thread."""
        return self._pending is None or self._pending.done()

    async def settle(self) -> None:
        """Wait until no step of this transaction is still running on a thread."""
        if not self.settled:
            assert self._pending is not None
            await asyncio.wait([self._pending])
