"""Watching the event log: replay from a revision, then follow new events as they commit.

In-process writers wake watchers at once through :class:`RevisionFeed`; writes by other processes
are noticed by one poller per store that reads the log's head every ``poll_interval`` seconds.
The feed also keeps the newest events in memory, read from the log once for every watcher: a
thousand subscribers of one change cost one query, not a thousand. Watchers further behind than
that tail read the log themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import sqlite3
import time
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlalchemy import Connection, func, select

from app.calls import stream_position
from app.observe import loop_counters
from app.observe.metrics import RECORDING, WATCH_LAG_SECONDS
from app.store.counters import read_counter
from app.store.engine import sqlite_connection
from app.store.errors import OutOfRange, Unavailable
from app.store.tables import (
    COMPACTED_REVISION,
    EventLogEntry,
    StoredObject,
    core_table,
    sqlite_time,
)

if TYPE_CHECKING:
    from app.store.database import Database

REPLAY_BATCH = 500
RECENT_EVENTS = 4096

_log = core_table(EventLogEntry)
# Observed for every event each watcher gets: a thousand subscribers make it a hot path.
_WATCH_LAG = loop_counters.histogram(WATCH_LAG_SECONDS)
_objects = core_table(StoredObject)


class EventType(enum.StrEnum):
    """What a write did to an object."""

    CREATED = "created"
    UPDATED = "updated"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class Event:
    """One committed write; ``data`` is the object after it (before it, for a deletion), ``at``
    when it was written (one moment for every write of a transaction)."""

    revision: int
    kind: str
    key: str
    type: EventType
    data: bytes
    at: datetime


@dataclass(frozen=True, slots=True)
class Commit:
    """The events of the watched kinds that one transaction wrote, oldest first.

    A transaction stamps its writes with one moment, and the log keeps it with each event: the
    events of one commit are the consecutive ones that share it. So every watcher, in any
    process, splits the log into the same commits, however its reads of the log were cut. (A
    transaction takes its moment at its first write, holding the write lock: the next one's is
    later by at least a statement, to the microsecond the log keeps; replicas on other hosts
    would need clocks equal to the microsecond for two neighbours to share one.)
    """

    events: tuple[Event, ...]

    @property
    def revision(self) -> int:
        """The revision of its last write: the position of a watcher that has it."""
        return self.events[-1].revision


def compacted_revision(conn: Connection) -> int:
    """The newest revision removed from the log by compaction (0 if never compacted)."""
    return read_counter(conn, COMPACTED_REVISION) or 0


def head_revision(conn: Connection) -> int:
    """The newest committed revision, even when compaction emptied the log."""
    newest = conn.execute(select(func.max(_log.c.revision))).scalar()
    return max(int(newest or 0), compacted_revision(conn))


def read_events(
    conn: Connection, after: int, kinds: tuple[str, ...] | None, limit: int
) -> tuple[list[Event], int, int]:
    """Events after ``after`` (all kinds if ``kinds`` is None) as ``(events, scanned, compacted)``.

    ``scanned`` is the revision up to which the log has been read, even where no event matched.
    """
    raw = sqlite_connection(conn)
    if raw is not None:
        head, events = _sqlite_events(raw, after, kinds, limit)
    else:
        # The head is read first: writers are serialised, so every revision up to it is
        # committed.
        head = head_revision(conn)
        query = (
            select(_log.c.revision, _log.c.kind, _log.c.key, _log.c.type, _log.c.data, _log.c.at)
            .where(_log.c.revision > after, _log.c.revision <= head)
            .order_by(_log.c.revision)
            .limit(limit)
        )
        if kinds is not None:
            query = query.where(_log.c.kind.in_(kinds))
        events = [
            Event(row.revision, row.kind, row.key, EventType(row.type), row.data, row.at)
            for row in conn.execute(query)
        ]
    # Read after the events: a compaction that raced the read shows up here, never as a gap.
    compacted = compacted_revision(conn)
    scanned = events[-1].revision if len(events) == limit else head
    return events, scanned, compacted


# head_revision as one statement (also for the inline SQLite reader).
SQLITE_HEAD = (
    "SELECT max(coalesce((SELECT max(revision) FROM event_log), 0), "
    "coalesce((SELECT value FROM store_meta WHERE name = ?), 0))"
)
# read_events on SQLite through the driver itself: the reconciler and every watch read the log
# as it grows, and SQLAlchemy's rows (its timestamp parsing most) cost 2.5 times these.
_SQLITE_EVENTS = (
    'SELECT revision, kind, "key", type, data, "at" FROM event_log '
    "WHERE revision > ? AND revision <= ?{kinds} ORDER BY revision LIMIT ?"
)
_EVENT_TYPES = {member.value: member for member in EventType}


def _sqlite_events(
    conn: sqlite3.Connection, after: int, kinds: tuple[str, ...] | None, limit: int
) -> tuple[int, list[Event]]:
    """The head, then the events after ``after`` up to it (as read_events reads them)."""
    (head,) = conn.execute(SQLITE_HEAD, (COMPACTED_REVISION,)).fetchone()
    chosen = "" if kinds is None else f" AND kind IN ({', '.join('?' * len(kinds))})"
    rows = conn.execute(_SQLITE_EVENTS.format(kinds=chosen), (after, head, *(kinds or ()), limit))
    events = [
        Event(revision, kind, key, _EVENT_TYPES[type_], data, sqlite_time(at))
        for revision, kind, key, type_, data, at in rows
    ]
    return head, events


def objects_at(conn: Connection, kind: str, revision: int) -> list[bytes]:
    """The data of every ``kind`` object as it stood at ``revision`` (in no particular order).

    Objects not written since are read as they are now; the others from their last log entry
    at or before ``revision``. ``OutOfRange`` if the log no longer holds what that needs.
    """
    compacted = compacted_revision(conn)
    gone = OutOfRange(
        f"the event log no longer holds the objects as they stood at revision {revision} "
        f"(compacted through revision {compacted}); list the current objects and watch from "
        "their revision",
        compacted_revision=compacted,
    )
    if revision < compacted:
        raise gone
    found = list(
        conn.execute(
            select(_objects.c.data).where(_objects.c.kind == kind, _objects.c.revision <= revision)
        ).scalars()
    )
    later = select(func.min(_log.c.revision)).where(_log.c.kind == kind, _log.c.revision > revision)
    firsts = conn.execute(
        select(_log.c.key, _log.c.type).where(
            _log.c.revision.in_(later.group_by(_log.c.key).scalar_subquery())
        )
    )
    # A key whose first later write created it did not exist then.
    existed = [row.key for row in firsts if row.type != EventType.CREATED.value]
    if not existed:
        return found
    lasts = select(func.max(_log.c.revision)).where(
        _log.c.kind == kind, _log.c.key.in_(existed), _log.c.revision <= revision
    )
    rows = list(
        conn.execute(
            select(_log.c.type, _log.c.data).where(
                _log.c.revision.in_(lasts.group_by(_log.c.key).scalar_subquery())
            )
        )
    )
    if len(rows) < len(existed):
        raise gone
    return found + [row.data for row in rows if row.type != EventType.DELETED.value]


class RevisionFeed:
    """The newest revision this process knows of, and a way to wait until it moves past one."""

    def __init__(
        self,
        database: Database,
        head: int,
        poll_interval: float,
        read_head: Callable[[], Awaitable[int]],
    ) -> None:
        self.head = head
        self._database = database
        self.read_head = read_head  # how the poller reads the log's head
        self._poll_interval = poll_interval
        self._changed = asyncio.Event()
        self._poller: asyncio.Task[None] | None = None
        self._closed = False
        # Every event with ``_tail_from < revision <= _tail_to`` is in ``_tail``, oldest first.
        self._tail: deque[Event] = deque(maxlen=RECENT_EVENTS)
        self._tail_from = head
        self._tail_to = head
        self._tail_read: asyncio.Future[None] | None = None

    async def recent_events(
        self, after: int, kinds: tuple[str, ...] | None
    ) -> tuple[list[Event], int] | None:
        """Events after ``after`` from memory and the revision they are complete through; None
        when ``after`` is older than the events kept (read the log instead)."""
        while self._tail_to < self.head and after >= self._tail_from:
            if self._tail_read is None:
                self._tail_read = asyncio.ensure_future(self._read_tail())
            read = self._tail_read
            try:
                # Shielded: one watcher going away must not cancel the read the others await.
                await asyncio.shield(read)
            finally:
                if self._tail_read is read and read.done():
                    self._tail_read = None
        if after < self._tail_from:
            return None
        # Walk back from the newest: a follower usually wants the last event or two, and a
        # thousand of them must not each scan the whole tail.
        newer: list[Event] = []
        for event in reversed(self._tail):
            if event.revision <= after:
                break
            if kinds is None or event.kind in kinds:
                newer.append(event)
        newer.reverse()
        return newer, self._tail_to

    def forget_through(self, revision: int) -> None:
        """Drop remembered events up to ``revision`` (compacted away): a watch from before it
        gets OUT_OF_RANGE from the log, as everywhere else."""
        while self._tail and self._tail[0].revision <= revision:
            self._tail.popleft()
        self._tail_from = max(self._tail_from, revision)
        self._tail_to = max(self._tail_to, revision)

    async def _read_tail(self) -> None:
        events, scanned, _ = await self._database.read(
            read_events, self._tail_to, None, RECENT_EVENTS
        )
        self._remember(events, scanned)

    def _remember(self, events: Sequence[Event], through: int) -> None:
        # Events this process wrote may have joined the tail while a read of the log was out.
        self._tail.extend(event for event in events if event.revision > self._tail_to)
        self._tail_to = max(self._tail_to, through)
        if len(self._tail) == RECENT_EVENTS:
            self._tail_from = self._tail[0].revision - 1

    def advance(self, revision: int, written: Sequence[Event] = ()) -> None:
        """Record that ``revision`` is committed and wake everyone waiting for it.

        ``written``: the events of this process's commit that reached ``revision``, oldest first.
        When the tail already holds everything before them, they join it as they are, so
        watchers need no read of the log; otherwise (another process wrote in between) the
        next watcher reads the gap from the log.
        """
        if written and written[0].revision == self._tail_to + 1:
            self._remember(written, written[-1].revision)
        if revision > self.head:
            self.head = revision
            changed, self._changed = self._changed, asyncio.Event()
            changed.set()

    async def wait_past(self, revision: int) -> None:
        """Return once a revision newer than ``revision`` is known to be committed."""
        self._start_poller()
        while self.head <= revision:
            if self._closed:
                raise Unavailable("the store is shutting down; watch again elsewhere or later")
            await self._changed.wait()

    def _start_poller(self) -> None:
        if self._closed:
            return
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(
                self._poll_other_writers(), name="store-revision-poller"
            )

    async def _poll_other_writers(self) -> None:
        while True:
            await asyncio.sleep(self._poll_interval)
            # A failed poll is retried next tick; watchers just wait a little longer.
            with contextlib.suppress(Exception):
                head = await self.read_head()
                # A head this process is committing is its writer's to announce, with its
                # events (announced here first, every watcher would read them from the log);
                # another process's write meanwhile reaches watchers with that announcement
                # (the gap is read from the log) or at the next poll.
                if not self._database.writing:
                    self.advance(head)

    async def close(self) -> None:
        """Stop the poller and end every watch still waiting (with ``Unavailable``)."""
        self._closed = True
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None


async def follow_events(
    database: Database,
    feed: RevisionFeed,
    kinds: Collection[str] | str | None,
    since_revision: int,
) -> AsyncGenerator[Event]:
    """Every event after ``since_revision`` for ``kinds``, then new ones as they commit."""
    async for events, _ in _follow_reads(database, feed, kinds, since_revision):
        for event in events:
            stream_position.mark(event.revision)
            _delivered(event)
            yield event


async def follow_commits(
    database: Database,
    feed: RevisionFeed,
    kinds: Collection[str] | str | None,
    since_revision: int,
) -> AsyncGenerator[Commit]:
    """As :func:`follow_events`, the events of each transaction together (see :class:`Commit`)."""
    pending: list[Event] = []
    async for events, whole in _follow_reads(database, feed, kinds, since_revision):
        for event in events:
            if pending and event.at != pending[-1].at:
                yield _commit(pending)
                pending = []
            pending.append(event)
        # A read cut short by its page size may end inside a transaction: the rest is next.
        if whole and pending:
            yield _commit(pending)
            pending = []


def _commit(events: list[Event]) -> Commit:
    stream_position.mark(events[-1].revision)
    _delivered(events[-1])
    return Commit(tuple(events))


async def _follow_reads(
    database: Database,
    feed: RevisionFeed,
    kinds: Collection[str] | str | None,
    since_revision: int,
) -> AsyncGenerator[tuple[list[Event], bool]]:
    """The events of each read of the log (or of its tail in memory) after ``since_revision``
    for ``kinds``, and whether the read reached the head: commits are atomic, so then its last
    transaction is whole."""
    if isinstance(kinds, str):
        kinds = (kinds,)
    wanted = None if kinds is None else tuple(kinds)
    after = stream_position.watch_start(since_revision)
    while True:
        recent = await feed.recent_events(after, wanted)
        if recent is not None:
            events, through = recent
            if events:
                yield events, True
            after = max(after, through)
            await feed.wait_past(after)
            continue
        events, scanned = await read_log(database, after, wanted)
        feed.advance(scanned)
        whole = len(events) < REPLAY_BATCH
        if events:
            yield events, whole
        after = max(after, scanned)
        if whole:
            await feed.wait_past(after)


async def read_log(
    database: Database, after: int, kinds: tuple[str, ...] | None
) -> tuple[list[Event], int]:
    """Up to ``REPLAY_BATCH`` events after ``after`` from the log, and the revision it has been
    read through; ``OutOfRange`` if compaction removed events after ``after``."""
    events, scanned, compacted = await database.read(read_events, after, kinds, REPLAY_BATCH)
    if after < compacted:
        raise OutOfRange(
            f"revision {after} is older than the compacted event log (compacted through "
            f"revision {compacted}); list the current objects and watch from their revision",
            compacted_revision=compacted,
        )
    return events, scanned


_committed_at: tuple[Event | None, float] = (None, 0.0)  # the last event delivered, its time


def _delivered(event: Event) -> None:
    """Watch lag: how long after its commit an event reaches a watcher."""
    global _committed_at
    if RECORDING.on:
        # A thousand watchers get the same event one after another: its time is read once.
        last, at = _committed_at
        if event is not last:
            when = event.at if event.at.tzinfo else event.at.replace(tzinfo=UTC)  # SQLite: naive
            at = when.timestamp()
            _committed_at = (event, at)
        _WATCH_LAG.observe(max(0.0, time.time() - at))
