"""ListenEvents' streams: where each one starts, and how it gets its events.

- The common stream (it sees every pod; no ``since_time``, ``until_time`` or resume point)
  reads the shared feed (:mod:`app.services.rkt.feed`): one translation for all of them.
- A stream with ``since_time`` or ``until_time``, or a node's stream, translates for itself from
  a start shared by the streams opening together (its replay gives ``since_time``'s backlog).
- A resuming stream (``Last-Event-ID``) translates for itself from the instances as they stood
  at the resume point; so does a stream that fell behind the feed, from the last write it sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc

from app.calls import stream_position
from app.calls.shared_calls import SharedCalls
from app.services.kudo.records import INSTANCE, InstanceRecord
from app.services.rkt import filters
from app.services.rkt.events import EventTranslator
from app.services.rkt.feed import EventFeed, FeedBehind, translate
from app.services.rkt.visibility import sees_every_pod, visible
from app.services.rkt.waiting import NextEvent
from app.services.status import abort_store_error
from app.store import ObjectStore, StoreError
from gen.v1alpha import api_pb2 as pb

# Instances decoded from recent events, shared by every stream (each event reaches them all).
RECENT_DECODED = 256
# Replies built for the events of recent writes, likewise shared (see ``_response``).
RECENT_REPLIES = 256


@dataclass(frozen=True)
class StreamStart:
    """Where event streams opening together start: a revision, every instance as of it, and
    their events up to it replayed once (a stream that sees every pod continues from a copy of
    ``translator``; a node's stream replays its own pods)."""

    revision: int
    instances: list[InstanceRecord]
    translator: EventTranslator
    events: list[tuple[int, pb.Event]]  # (moment in ns, event), in time order


class EventStreams:
    """Every ListenEvents stream of one runtime service."""

    def __init__(self, store: ObjectStore, image_retention_ns: int) -> None:
        self.store = store
        self.image_retention_ns = image_retention_ns
        # Nothing is replayed from before this moment (see the service's docstring).
        self.started_ns = time.time_ns()
        self._recent: dict[int, InstanceRecord] = {}
        self._responses: dict[tuple[int, ...], tuple[list[pb.Event], pb.ListenEventsResponse]] = {}
        self._stream_starts: SharedCalls[StreamStart] = SharedCalls()
        self._feed: EventFeed | None = None
        self._revisions: SharedCalls[int] = SharedCalls()

    async def listen(
        self, wanted: pb.EventFilter, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.ListenEventsResponse]:
        """The replies of one stream with filter ``wanted`` (checked already)."""
        if stream_position.resuming():
            # The client has every event through the resume point: start from the instances
            # as they stood then, so each later write is translated once and none is lost.
            revision = stream_position.watch_start(0)
            translator = await self._translator_at(revision, context)
        elif sees_every_pod() and not wanted.since_time and not wanted.until_time:
            # The common stream: from the shared feed, until it falls behind.
            try:
                async for reply in self._from_feed(wanted):
                    yield reply
            except FeedBehind as behind:
                revision = behind.revision
            translator = await self._translator_at(revision, context)
        else:
            start = await self._stream_start()
            revision = start.revision
            if sees_every_pod():
                translator, backlog = start.translator.copy(), start.events
            else:
                translator = EventTranslator(self.image_retention_ns)
                backlog = translator.replay_timed([i for i in start.instances if visible(i)])
            if wanted.since_time:  # the backlog (a resuming client has it already)
                since_ns = max(wanted.since_time * 1_000_000_000, self.started_ns)
                replayed = [
                    event
                    for at, event in backlog
                    if at >= since_ns and filters.event_matches(event, wanted)
                ]
                if replayed:
                    yield pb.ListenEventsResponse(events=replayed)
        async for reply in self._translated(wanted, translator, revision):
            yield reply

    async def _stream_start(self) -> StreamStart:
        """A revision and every instance's events as of it, for an event stream to start from.

        Streams that start while one is being read share it (a thousand dashboards opening at
        once cost one read and one replay of the instances' histories): whatever changed since
        still reaches each of them, as they watch the log from that revision.
        """
        return await self._stream_starts.run(None, self._read_stream_start)

    async def _read_stream_start(self) -> StreamStart:
        revision = await self.store.current_revision()
        # Shared by every caller's stream: unfiltered (each stream filters for its caller).
        instances = [InstanceRecord.from_bytes(r.data) for r in await self.store.list(INSTANCE)]
        translator = EventTranslator(self.image_retention_ns)
        events = translator.replay_timed(instances)
        return StreamStart(revision, instances, translator, events)

    async def _translator_at(
        self, revision: int, context: grpc.aio.ServicerContext
    ) -> EventTranslator:
        """A translator of the instances as they stood at ``revision`` (the caller's)."""
        try:
            stored = await self.store.list_at(INSTANCE, revision)
        except StoreError as exc:
            await abort_store_error(context, exc)
        instances = [InstanceRecord.from_bytes(data) for data in stored]
        translator = EventTranslator(self.image_retention_ns)
        translator.replay_timed([i for i in instances if visible(i)])
        return translator

    async def _from_feed(self, wanted: pb.EventFilter) -> AsyncIterator[pb.ListenEventsResponse]:
        """The feed's events of writes after this stream opened (and images' removals from
        then on); FeedBehind when the stream must go on by itself."""
        if self._feed is None or self._feed.closed:
            self._feed = EventFeed(self.store, self._feed_start, self._decoded)
        feed = self._feed
        position = feed.join()
        try:
            after = await self._feed_after(feed)
            delivered = after
            every = wanted.ByteSize() == 0  # no filter
            while True:
                entries, position = await feed.read(position, delivered)
                # One frame an entry (a transaction's events), as a watch of its own would send:
                # a frame's revision (an SSE id) is the same on every stream and every replica.
                for entry in entries:
                    if 0 < entry.write <= after:
                        continue  # a write from before this stream opened
                    # (An image's removal translated before the stream's start is not behind it.)
                    delivered = max(delivered, entry.revision)
                    if every:
                        matching = entry.events
                    else:
                        matching = [e for e in entry.events if filters.event_matches(e, wanted)]
                    if matching:
                        stream_position.mark(delivered)
                        whole = len(matching) == len(entry.events)
                        yield entry.reply if whole else self._response(matching)
        finally:
            feed.leave()

    async def _feed_after(self, feed: EventFeed) -> int:
        """The revision a stream joining ``feed`` now starts after: the store's, or the feed's
        own start while that is being read (the stream opened together with it)."""
        if feed.started.done():
            # Streams opening together share one read, as they share a start otherwise.
            return await self._revisions.run(feed, self.store.current_revision)
        return await asyncio.shield(feed.started)

    async def _feed_start(self) -> tuple[int, EventTranslator]:
        start = await self._read_stream_start()
        return start.revision, start.translator

    async def _translated(
        self, wanted: pb.EventFilter, translator: EventTranslator, revision: int
    ) -> AsyncIterator[pb.ListenEventsResponse]:
        """Every write after ``revision`` translated by this stream's own ``translator``, a
        transaction's events in one reply (as the feed sends them)."""
        until_ns = wanted.until_time * 1_000_000_000
        commits = self.store.watch_commits(INSTANCE, revision)
        async with contextlib.aclosing(commits):
            waiting = NextEvent(commits)
            try:
                while not until_ns or time.time_ns() < until_ns:
                    # Wake for the next change, an image's removal, or the stream's end.
                    moments = [m for m in (translator.next_due(), until_ns) if m]
                    timeout = (min(moments) - time.time_ns()) / 1e9 if moments else None
                    commit = await waiting.within(None if timeout is None else max(timeout, 0))
                    fresh = []
                    if commit is not None:
                        fresh = translate(commit, translator, self._decoded, visible)
                    fresh += translator.removals(time.time_ns())
                    matching = [e for e in fresh if filters.event_matches(e, wanted)]
                    if matching:
                        yield self._response(matching)
            finally:
                await waiting.close()

    def _response(self, events: list[pb.Event]) -> pb.ListenEventsResponse:
        """The reply carrying ``events``; built once for every stream sending the same events
        (translations are shared between streams, so the same event objects)."""
        key = tuple(map(id, events))
        known = self._responses.get(key)
        # The ids are only a key: the events themselves are kept and compared.
        if known is not None and all(a is b for a, b in zip(known[0], events, strict=True)):
            return known[1]
        response = pb.ListenEventsResponse(events=events)
        if len(self._responses) >= RECENT_REPLIES:
            del self._responses[next(iter(self._responses))]
        self._responses[key] = (events, response)
        return response

    def _decoded(self, revision: int, data: bytes) -> InstanceRecord:
        """The instance an event carries; decoded once for every stream that sees the event."""
        instance = self._recent.get(revision)
        if instance is None:
            instance = InstanceRecord.from_bytes(data)
            if len(self._recent) >= RECENT_DECODED:
                del self._recent[next(iter(self._recent))]
            self._recent[revision] = instance
        return instance
