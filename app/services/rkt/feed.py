"""One translation of the instance log, shared by every event stream that sees every pod.

A stream that translated the log itself woke for every write, read it from the watch, decoded it
and ran it through an image shelf of its own: a thousand dashboards did the same work a thousand
times over, and that, not sending, was most of what an event cost. The feed follows the log once,
from one snapshot, and keeps the events each transaction (or an image's retention ending)
produced; a stream reads them from where it joined and only filters and sends.

A stream joins at the store's revision when it opens and skips what the feed translated for
transactions up to it, so it sees exactly the writes after it opened, as with a watch of its own;
streams opening while the feed reads its snapshot start from that snapshot's revision.
A stream whose client reads so slowly that it falls :data:`FEED_KEPT` entries behind leaves the
feed (:class:`FeedBehind`) and translates for itself from the last write it delivered, as a
resuming stream does; so does every stream if the feed stops on a store error.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from app.services.kudo.records import INSTANCE, InstanceRecord
from app.services.rkt.events import EventTranslator
from app.services.rkt.waiting import NextEvent
from app.store import Commit, EventType, ObjectStore
from gen.v1alpha import api_pb2 as pb

# Entries kept for streams behind the newest: a stream further behind leaves the feed.
FEED_KEPT = 1024


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """The events of one transaction's writes (``write`` is the revision of its last) or of
    images' retention ending (no write: ``write`` 0); ``revision`` is the newest write
    translated so far, the stream's position once it sent them. ``reply`` carries them all, for
    every stream that wants all: each stream sends an entry as one frame, so frames (and their
    SSE ids) are the same on every stream, and on every replica, as with a watch of its own.
    A simulated runtime step that moves twenty instances in one transaction is one frame, not
    twenty: each frame sent to a thousand subscribers costs milliseconds, and the Start sent
    just after that step waited behind all of them."""

    revision: int
    write: int
    events: list[pb.Event]
    reply: pb.ListenEventsResponse


def _entry(revision: int, write: int, events: list[pb.Event]) -> FeedEntry:
    return FeedEntry(revision, write, events, pb.ListenEventsResponse(events=events))


class FeedBehind(Exception):
    """The stream must translate for itself from ``revision`` (it has every event through it)."""

    def __init__(self, revision: int) -> None:
        super().__init__(revision)
        self.revision = revision


Start = Callable[[], Awaitable[tuple[int, EventTranslator]]]
Decode = Callable[[int, bytes], InstanceRecord]


def translate(
    commit: Commit,
    translator: EventTranslator,
    decode: Decode,
    shown: Callable[[InstanceRecord], bool] | None = None,
) -> list[pb.Event]:
    """The events ``translator`` makes of one commit's instance writes (of the ``shown``
    instances only, if given): the feed's and a stream translating for itself alike."""
    fresh: list[pb.Event] = []
    for written in commit.events:
        if written.type is not EventType.DELETED:
            instance = decode(written.revision, written.data)
            if shown is None or shown(instance):
                fresh += translator.absorb(instance)
    return fresh


class EventFeed:
    """Translates the instance log for its readers while it has any; closed after the last
    leaves (or on a store error)."""

    def __init__(self, store: ObjectStore, start: Start, decode: Decode) -> None:
        self._store = store
        self._start = start
        self._decode = decode
        self._entries: list[FeedEntry] = []
        self._first = 0  # the position of _entries[0]
        self._changed = asyncio.Event()
        self._readers = 0
        self._failed = False
        self.closed = False
        # The revision its translation starts after, once read (streams joining before then
        # start there too: they opened together with it).
        self.started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        # Its own context: the feed outlives the call that started it, and is nobody's call.
        self._task = asyncio.get_running_loop().create_task(
            self._run(), context=contextvars.Context()
        )

    def join(self) -> int:
        """A reader's position: the entries from now on."""
        self._readers += 1
        return self._first + len(self._entries)

    def leave(self) -> None:
        self._readers -= 1
        if not self._readers:
            self.closed = True
            self._task.cancel()

    async def read(self, position: int, delivered: int) -> tuple[list[FeedEntry], int]:
        """The entries from ``position`` on, waiting for one, and the position after them.
        ``delivered`` is the reader's revision, for :class:`FeedBehind`."""
        while True:
            if self._failed or position < self._first:
                raise FeedBehind(delivered)
            start = position - self._first
            if start < len(self._entries):
                return self._entries[start:], self._first + len(self._entries)
            await self._changed.wait()

    def _publish(self, entry: FeedEntry) -> None:
        self._entries.append(entry)
        if len(self._entries) >= 2 * FEED_KEPT:
            del self._entries[:FEED_KEPT]
            self._first += FEED_KEPT
        self._wake()

    def _wake(self) -> None:
        # Readers waiting now wake; later ones wait for the next change.
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _run(self) -> None:
        try:
            revision, translator = await self._start()
            self.started.set_result(revision)
            commits = self._store.watch_commits(INSTANCE, revision)
            async with contextlib.aclosing(commits):
                waiting = NextEvent(commits)
                try:
                    while True:
                        due = translator.next_due()
                        timeout = None if due is None else max((due - time.time_ns()) / 1e9, 0)
                        commit = await waiting.within(timeout)
                        if commit is not None:
                            revision = commit.revision
                            fresh = translate(commit, translator, self._decode)
                            if fresh:
                                self._publish(_entry(revision, revision, fresh))
                        removed = translator.removals(time.time_ns())
                        if removed:
                            self._publish(_entry(revision, 0, removed))
                finally:
                    await waiting.close()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not self.started.done():
                self.started.set_exception(exc)  # the readers waiting for it meet the error
                self.started.exception()  # and none may be left to: not worth a warning
            # Every reader goes on by itself (and meets the store's error there, if it lasts);
            # streams opening later start a new feed.
            self._failed = self.closed = True
            self._wake()
