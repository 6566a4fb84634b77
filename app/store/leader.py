"""Choosing the one process that runs background work (simulation, reconcilers, compaction).

On PostgreSQL the leader is whoever holds a session-level advisory lock on a dedicated
connection. The lock dies with that connection, so when the leader's process dies, PostgreSQL
drops the lock and another process takes it on its next try (``retry_interval``). On SQLite the
workers of one server share the database file; the leader is whoever holds an exclusive
``flock`` on a file beside it, which the kernel releases when that process dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import Callable
from typing import Any

import psycopg

from app.store.database import advisory_lock_key
from app.store.objects import ObjectStore

# A dead peer (pulled cable, frozen VM) is noticed within about idle + interval * count seconds.
# libpq connection parameters, which psycopg passes on as they are.
_KEEPALIVE: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
}
_SERVER_KEEPALIVE = (
    "-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=3"
)


class LeaderElection:
    """Keeps trying to become leader; ``is_leader`` says whether this process is it right now."""

    def __init__(
        self,
        store: ObjectStore,
        *,
        name: str = "portico.leader",
        retry_interval: float = 1.0,
        on_elected: Callable[[], None] | None = None,
        on_deposed: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self._key = advisory_lock_key(name, store.database.namespace)
        self._retry_interval = retry_interval
        self._on_elected = on_elected
        self._on_deposed = on_deposed
        self._elected = asyncio.Event()
        self._deposed = asyncio.Event()
        self._deposed.set()
        # Tries that found another process leading: what "not elected" is observed by.
        self.attempts_lost = 0
        # Why the last try could not ask the database ("" once it could): no process leads
        # while the database is away, and /readyz says so.
        self.trouble = ""

    @property
    def is_leader(self) -> bool:
        """Whether this process is the leader now."""
        return self._elected.is_set()

    async def wait_elected(self) -> None:
        """Return once this process is the leader."""
        await self._elected.wait()

    async def wait_deposed(self) -> None:
        """Return once this process is no longer the leader."""
        await self._deposed.wait()

    def _set_leader(self, leader: bool) -> None:
        if leader == self.is_leader:
            return
        if leader:
            self._deposed.clear()
            self._elected.set()
            callback = self._on_elected
        else:
            self._elected.clear()
            self._deposed.set()
            callback = self._on_deposed
        if callback is not None:
            callback()

    async def run(self) -> None:
        """Campaign until cancelled; leadership is given up when this returns."""
        try:
            if self._store.is_sqlite:
                await self._campaign_by_file_lock()
            while True:
                try:
                    await self._campaign()
                except (psycopg.Error, OSError, TimeoutError) as exc:
                    self.trouble = _first_line(exc)
                self._set_leader(False)
                await asyncio.sleep(self._retry_interval)
        finally:
            self._set_leader(False)

    async def _campaign_by_file_lock(self) -> None:
        path = f"{self._store.database.engine.url.database}.leader"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    self.attempts_lost += 1
                    await asyncio.sleep(self._retry_interval)
                    continue
                self._set_leader(True)
                await asyncio.Future()  # leader until cancelled or the process ends
        finally:
            os.close(fd)  # closing releases the lock

    async def _campaign(self) -> None:
        url = self._store.database.engine.url.set(drivername="postgresql")
        timeout = max(2.0, self._retry_interval * 3)
        conn = await asyncio.wait_for(
            psycopg.AsyncConnection.connect(
                url.render_as_string(hide_password=False),
                autocommit=True,
                connect_timeout=max(1, int(timeout)),
                options=_SERVER_KEEPALIVE,
                application_name="portico-leader-election",
                **_KEEPALIVE,
            ),
            timeout,
        )
        try:
            while True:
                if self.is_leader:
                    # The lock is only as alive as this connection: check it still works.
                    await asyncio.wait_for(conn.execute("SELECT 1"), timeout)
                else:
                    cursor = await asyncio.wait_for(
                        conn.execute("SELECT pg_try_advisory_lock(%s)", (self._key,)), timeout
                    )
                    row = await cursor.fetchone()
                    self._set_leader(bool(row and row[0]))
                    self.attempts_lost += not self.is_leader
                self.trouble = ""
                await asyncio.sleep(self._retry_interval)
        finally:
            # Leadership ends before the lock is released, never after.
            self._set_leader(False)
            with contextlib.suppress(psycopg.Error, OSError):
                await conn.close()


def _first_line(exc: BaseException) -> str:
    said = str(exc).strip()
    return said.splitlines()[0][:300] if said else type(exc).__name__
