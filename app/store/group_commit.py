"""Group commit: concurrent write transactions share one database transaction and one fsync.

Writers of a process take turns, one logical transaction at a time (the event log's revision
order stays the commit order). The first turn opens a database transaction on a worker thread
(``BEGIN IMMEDIATE`` on SQLite, ``BEGIN`` plus the advisory write lock on PostgreSQL) and every
turn runs inside a ``SAVEPOINT`` of it: a logical transaction that fails is rolled back to its
savepoint alone, and its neighbours carry on. When a turn ends and no other writer is waiting
for one (or the group holds ``max_members`` transactions, or is ``max_seconds`` old), the group
commits on a worker thread: one ``COMMIT``, one fsync, for all of them. Only then does any of
their callers hear back, so nothing is acknowledged before it is durable: a crash at any moment
loses only writes nobody was told about.

While one group commits (the fsync), the writers that arrive queue for the next turn, and the
next group takes all of them: the busier the store, the more transactions share each fsync.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from app.observe.metrics import GROUP_COMMITS, GROUP_COMMITTED, RECORDING, WRITE_LOCK_SECONDS
from app.store.runner import TransactionRunner, call_mapped, execute
from app.store.turn_lock import TurnLock

# A transaction's own savepoint; the ones nested in it are numbered (TransactionRunner).
TURN_SAVEPOINT = "portico_turn"
_KEEP_TURN = (f"RELEASE SAVEPOINT {TURN_SAVEPOINT}",)
_UNDO_TURN = (f"ROLLBACK TO SAVEPOINT {TURN_SAVEPOINT}", f"RELEASE SAVEPOINT {TURN_SAVEPOINT}")
DEFAULT_MAX_MEMBERS = 256
DEFAULT_MAX_SECONDS = 0.02

_PROCESS_LOCK_WAIT = WRITE_LOCK_SECONDS.labels("process")


@dataclass
class _Group:
    """One open database transaction and the logical transactions it holds so far."""

    conn: Connection
    opened: float
    committed: asyncio.Future[None]
    members: int = 0
    broken: BaseException | None = None


class GroupCommit:
    """Turns at writing, grouped into shared commits (see the module's docstring).

    ``begin`` checks out a connection and opens the database transaction holding the write
    lock; ``end(conn, commit)`` commits or rolls it back, lets the next writer in and closes the
    connection. Both block, so they run on ``executor``.
    """

    def __init__(
        self,
        begin: Callable[[], Connection],
        end: Callable[[Connection, bool], None],
        executor: ThreadPoolExecutor,
        *,
        inline_steps: bool,
        max_members: int = DEFAULT_MAX_MEMBERS,
        max_seconds: float = DEFAULT_MAX_SECONDS,
    ) -> None:
        self._begin = begin
        self._end = end
        self._executor = executor
        self._inline_steps = inline_steps
        self._max_members = max_members
        self._max_seconds = max_seconds
        self._lock = TurnLock()  # callers' writes before background work's
        self._waiting = 0  # writers queued for a turn: while any is, the group stays open
        self.writing = 0  # turns begun and not yet over (committed and their callers told)
        self._group: _Group | None = None
        self._sweeper: asyncio.Future[None] | None = None
        self._endings: set[asyncio.Future[asyncio.Future[None]]] = set()

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[TransactionRunner]:
        """One logical write transaction: committed (durably) when the block ends without an
        error, rolled back alone if it raises. Only one turn of a process runs at a time."""
        self.writing += 1
        try:
            await self._acquire()
            try:
                group = await self._open()
                runner = TransactionRunner(
                    self._executor, inline_steps=self._inline_steps, opening=TURN_SAVEPOINT
                )
                runner.conn = group.conn
            except BaseException:
                self._lock.release()
                raise
            try:
                yield runner
            except asyncio.CancelledError:
                self._roll_back_apart(group, runner)
                raise
            except BaseException:
                await self._close_turn(group, runner, ok=False)
                raise
            committed = await self._close_turn(group, runner, ok=True)
            # Shielded: the group's outcome is every member's; one caller going away cancels
            # only its own wait.
            await asyncio.shield(committed)
        finally:
            # Counted until the caller's step that follows the commit has run: that step tells
            # the store's watchers what it wrote (see RevisionFeed's poller).
            asyncio.get_running_loop().call_soon(self._written)

    def _written(self) -> None:
        self.writing -= 1

    def callers_waiting(self) -> bool:
        """Whether a caller's write is queued for a turn (behind a turn or a commit)."""
        return self._lock.callers_waiting()

    async def _close_turn(
        self, group: _Group, runner: TransactionRunner, *, ok: bool
    ) -> asyncio.Future[None]:
        if self._inline_steps and runner.settled:
            # SQLite: nothing to wait for; the commit, if due, finishes in a callback.
            return self._end_turn_now(group, runner, ok=ok)
        # A task, shielded: the ending owns the lock, and must finish even if this caller goes.
        return await asyncio.shield(asyncio.ensure_future(self._end_turn(group, runner, ok=ok)))

    def _roll_back_apart(self, group: _Group, runner: TransactionRunner) -> None:
        """End the turn of a writer that was cancelled, without making it wait: on PostgreSQL the
        statement it was in, then the rollback's, run on the thread pool, which a busy server
        has queued work for, and a stopping leader waited seconds for its job to be cancelled.
        The ending owns the write lock until it is done, so no other turn starts meanwhile."""
        if self._inline_steps and runner.settled:
            self._end_turn_now(group, runner, ok=False)
            return
        ending = asyncio.ensure_future(self._end_turn(group, runner, ok=False))
        self._endings.add(ending)  # a task nothing awaits must be kept until done
        ending.add_done_callback(self._endings.discard)
        ending.add_done_callback(_retrieve)

    async def _acquire(self) -> None:
        started = time.perf_counter()
        self._waiting += 1
        try:
            await self._lock.acquire()
        except BaseException:
            self._waiting -= 1
            # The group may have stayed open for this turn: make sure someone commits it.
            if self._group is not None:
                self._sweeper = asyncio.ensure_future(self._commit_when_idle())
            raise
        self._waiting -= 1
        if RECORDING.on:
            _PROCESS_LOCK_WAIT.observe(time.perf_counter() - started)

    async def _open(self) -> _Group:
        if self._group is None:
            loop = asyncio.get_running_loop()
            opening = _Opening(self._begin, self._end)
            try:
                conn = await loop.run_in_executor(self._executor, opening.begin)
            except asyncio.CancelledError:
                # The thread may carry on and open the write transaction: it is ended, or it
                # would hold the database's write lock for as long as the connection lives.
                opening.abandon()
                raise
            committed: asyncio.Future[None] = loop.create_future()
            # A group whose commit failed may have no caller left to hear it: never "unretrieved".
            committed.add_done_callback(_retrieve)
            self._group = _Group(conn, time.monotonic(), committed)
        return self._group

    def _end_turn_now(
        self, group: _Group, runner: TransactionRunner, *, ok: bool
    ) -> asyncio.Future[None]:
        """End a turn whose statements run inline, without awaiting: no task per write, and
        nothing can interrupt it. The lock passes on now, or when the commit it starts is done."""
        with self._lock_released_on_error():
            try:
                for statement in self._savepoint_ending(group, runner, ok=ok):
                    call_mapped(runner.run_now, execute, statement)
            except BaseException as error:
                group.broken = error  # the connection is unusable: the group cannot commit
            self._counted(group, runner, ok=ok)
        self._pass_on(group)
        return group.committed

    async def _end_turn(
        self, group: _Group, runner: TransactionRunner, *, ok: bool
    ) -> asyncio.Future[None]:
        """End a turn whose statements run on threads (PostgreSQL): as above, with awaits."""
        with self._lock_released_on_error():
            await runner.settle()
            try:
                for statement in self._savepoint_ending(group, runner, ok=ok):
                    await runner.run(execute, statement)
            except BaseException as error:
                group.broken = error
            self._counted(group, runner, ok=ok)
        self._pass_on(group)
        return group.committed

    @contextlib.contextmanager
    def _lock_released_on_error(self) -> Iterator[None]:
        """A turn's ending that fails lets the next writer in: nothing else would."""
        try:
            yield
        except BaseException:
            self._lock.release()
            raise

    @staticmethod
    def _savepoint_ending(group: _Group, runner: TransactionRunner, *, ok: bool) -> tuple[str, ...]:
        """The statements that end the turn's savepoint: kept (released) or undone first; none
        if it never opened, or if the group's connection already broke."""
        if not runner.opened or group.broken is not None:
            return ()
        return _KEEP_TURN if ok else _UNDO_TURN

    def _counted(self, group: _Group, runner: TransactionRunner, *, ok: bool) -> None:
        runner.conn = None  # over: tasks it started no longer join it (Database.joined)
        if ok:
            group.members += 1

    def _pass_on(self, group: _Group) -> None:
        """Commit the group if it is time (the commit's end lets the next turn in), else let
        the next turn in now."""
        if group.broken is not None or self._time_to_commit(group, group.members):
            self._start_commit(group)
        else:
            self._lock.release()

    def _time_to_commit(self, group: _Group, members: int) -> bool:
        return (
            self._waiting == 0
            or members >= self._max_members
            or time.monotonic() - group.opened >= self._max_seconds
        )

    def _start_commit(self, group: _Group) -> None:
        """Commit the group on a thread (roll it back if broken); when that is done, tell its
        members and let the next turn in. A callback, not a task: no caller going away can
        stop it halfway."""
        self._group = None
        commit = group.broken is None
        loop = asyncio.get_running_loop()
        try:
            done = loop.run_in_executor(
                self._executor, functools.partial(call_mapped, self._end, group.conn, commit)
            )
        except RuntimeError as error:
            # The executor is shut down (the store closed under this group): end the
            # transaction here, a rollback that does not wait, and fail its members, rather
            # than leave it holding the write lock and the next writers waiting for ever.
            with contextlib.suppress(Exception):
                call_mapped(self._end, group.conn, False)
            group.broken = group.broken or error
            done = loop.create_future()
            done.set_exception(error)
            commit = False
        done.add_done_callback(functools.partial(self._committed, group, commit))

    def _committed(self, group: _Group, commit: bool, done: asyncio.Future[None]) -> None:
        try:
            error = done.exception()
            if error is not None or not commit:
                group.committed.set_exception(group.broken or error or RuntimeError("rolled back"))
                return
            if RECORDING.on and group.members:
                GROUP_COMMITS.inc()
                GROUP_COMMITTED.inc(group.members)
            group.committed.set_result(None)
        finally:
            self._lock.release()

    async def _commit_when_idle(self) -> None:
        """Commit an open group that no turn is left to end (its next writer gave up)."""
        await self._lock.acquire()
        group = self._group
        if group is None or self._waiting:
            self._lock.release()
            return
        self._start_commit(group)
        with contextlib.suppress(Exception):
            await asyncio.shield(group.committed)

    async def close(self) -> None:
        """Let every writer queued so far take its turn, then commit the group they leave open.
        The caller refuses new writers first.

        The lock is not taken in arrival order: callers' lane goes first, so a close waiting
        there overtakes background work's writers. It gives the lock back to them until none is
        left waiting: taking it once and returning (as if the queue were empty) closed the store
        under them, and their turns, with the group of every writer before them, failed."""
        while True:
            await self._lock.acquire()
            if not self._waiting:
                break
            self._lock.release()
            await asyncio.sleep(0)  # the writer handed the lock (or giving up) runs first
        group = self._group
        if group is None:
            self._lock.release()
            return
        self._start_commit(group)
        with contextlib.suppress(Exception):
            await asyncio.shield(group.committed)


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


class _Opening:
    """A group's transaction being opened on a thread, for a caller that may go away meanwhile:
    whichever of the thread and the caller comes second ends the transaction."""

    def __init__(
        self, begin: Callable[[], Connection], end: Callable[[Connection, bool], None]
    ) -> None:
        self._begin = begin
        self._end = end
        self._lock = threading.Lock()
        self._abandoned = False
        self._conn: Connection | None = None

    def begin(self) -> Connection:
        conn = call_mapped(self._begin)
        with self._lock:
            if not self._abandoned:
                self._conn = conn
                return conn
        call_mapped(self._end, conn, False)
        raise asyncio.CancelledError

    def abandon(self) -> None:
        with self._lock:
            self._abandoned = True
            conn, self._conn = self._conn, None
        if conn is not None:  # opened just before the caller went: a rollback does not wait
            with contextlib.suppress(Exception):
                call_mapped(self._end, conn, False)
