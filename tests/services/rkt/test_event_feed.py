"""Event streams share one translation of the log, and one that falls behind loses nothing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.services.kudo.records import INSTANCE, InstanceRecord
from app.services.rkt import feed
from app.services.rkt.events import EventTranslator
from gen.scheduler import scheduler_pb2 as pb
from gen.scheduler import scheduler_pb2_grpc as pb_grpc
from gen.v1alpha import api_pb2 as rkt
from gen.v1alpha import api_pb2_grpc as rkt_grpc
from tests.harness import Running, eventually, run, running
from tests.services.kudo.world import bearer, instance, wait_status
from tests.services.rkt.listening import listening, stream_starts

Seen = list[tuple[str, str]]  # (event type, pod or image name), in the order received


async def _start(server: Running, token: str, name: str) -> str:
    stub = pb_grpc.InstanceServiceStub(server.channel)
    call = stub.Create(instance(name), metadata=bearer(token))
    first = await anext(call.__aiter__())
    call.cancel()
    await wait_status(server, first.id, pb.RUNNING)
    return first.id


def _events(reply: rkt.ListenEventsResponse) -> Seen:
    return [(rkt.EventType.Name(e.type), getattr(e, "from")) for e in reply.events]


async def _collect(replies: AsyncIterator[rkt.ListenEventsResponse], into: Seen) -> None:
    async for reply in replies:
        into.extend(_events(reply))


def test_a_stream_that_falls_behind_the_feed_still_gets_every_event_once_in_order(
    tmp_path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(feed, "FEED_KEPT", 2)  # a stream two writes behind is out

    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            streams = server.portico.servicers["v1alpha.PublicAPI"].events
            by_itself: list[int] = []
            translator_at = streams._translator_at

            async def recorded(revision: int, context: Any) -> EventTranslator:
                by_itself.append(revision)
                return await translator_at(revision, context)

            streams._translator_at = recorded
            starts = stream_starts(server)
            # Read in-process: a gRPC or HTTP client's buffers would keep reading for it.
            prompt_seen: Seen = []
            prompt = asyncio.ensure_future(
                _collect(streams.listen(rkt.EventFilter(), None), prompt_seen)
            )
            slow = streams.listen(rkt.EventFilter(), None)
            slow_seen = _events(await asyncio.wait_for(_first(slow, server, token, starts), 10))
            # The slow client reads nothing while three more pods start (many feed entries).
            for name in ("cache", "db", "queue"):
                await _start(server, token, name)
            while len(slow_seen) < len(prompt_seen):
                slow_seen += _events(await asyncio.wait_for(anext(slow), 10))
            assert by_itself, "the slow stream never fell behind the feed"
            assert slow_seen == prompt_seen
            assert {"cache", "db", "queue"} <= {pod for _, pod in prompt_seen}
            prompt.cancel()
            await slow.aclose()

    async def _first(slow: Any, server: Running, token: str, starts: list[int]) -> Any:
        reading = asyncio.ensure_future(anext(slow))
        await listening(starts, 2)
        await _start(server, token, "web")
        return await reading

    run(scenario())


def test_twenty_streams_translate_each_write_once(tmp_path, monkeypatch: pytest.MonkeyPatch):
    absorbed = 0
    absorb = EventTranslator.absorb

    def counted(self: EventTranslator, instance: Any) -> Any:
        nonlocal absorbed
        absorbed += 1
        return absorb(self, instance)

    monkeypatch.setattr(EventTranslator, "absorb", counted)

    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            store = server.portico.store
            assert store is not None
            starts = stream_starts(server)
            api = rkt_grpc.PublicAPIStub(server.channel)
            calls = [
                api.ListenEvents(rkt.ListenEventsRequest(), metadata=bearer(token))
                for _ in range(20)
            ]
            seen: list[Seen] = [[] for _ in calls]
            readers = [
                asyncio.ensure_future(_collect(c.__aiter__(), s))
                for c, s in zip(calls, seen, strict=True)
            ]
            await listening(starts, 20)
            before = await store.current_revision()
            await _start(server, token, "web")

            async def every_stream_has_it() -> bool:
                return all(("EVENT_TYPE_APP_STARTED", "web") in s for s in seen)

            await eventually(every_stream_has_it, what="every stream has web's start")
            writes, _ = await store.changes((INSTANCE,), before)
            assert absorbed == len(writes)
            for call in calls:
                call.cancel()
            await asyncio.gather(*readers, return_exceptions=True)

    run(scenario())


def test_streams_that_keep_up_get_the_same_frames(tmp_path):
    """One frame per feed entry, for every stream: SSE ids (a frame's revision) are the same
    for every subscriber, so a client resuming elsewhere is compared like with like."""

    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            streams = server.portico.servicers["v1alpha.PublicAPI"].events
            starts = stream_starts(server)
            frames: list[list[Seen]] = [[], [], []]

            async def collect(into: list[Seen]) -> None:
                async for reply in streams.listen(rkt.EventFilter(), None):
                    into.append(_events(reply))

            readers = [asyncio.ensure_future(collect(f)) for f in frames]
            await listening(starts, 3)
            for name in ("web", "cache"):
                await _start(server, token, name)

            async def all_have_both() -> bool:
                return all(
                    {("EVENT_TYPE_APP_STARTED", n) for n in ("web", "cache")}
                    <= {e for frame in f for e in frame}
                    for f in frames
                )

            await eventually(all_have_both, what="every stream has both pods' starts")
            for reader in readers:
                reader.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
            assert frames[0] == frames[1] == frames[2]
            assert len(frames[0]) > 1

    run(scenario())


def test_a_transaction_moving_several_pods_reaches_each_stream_as_one_reply(tmp_path):
    """A simulated runtime step moves every due instance in one transaction: its events go out
    as one reply (one SSE frame), from the shared feed and from a stream translating for itself
    alike, not one reply per instance written (a thousand subscribers each got twenty frames
    for one step, and the Start sent after it waited behind them)."""

    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            store = server.portico.store
            assert store is not None
            streams = server.portico.servicers["v1alpha.PublicAPI"].events
            pods = {"web": await _start(server, token, "web")}
            pods["cache"] = await _start(server, token, "cache")
            starts = stream_starts(server)
            replies: list[list[Seen]] = [[], []]

            async def collect(wanted: rkt.EventFilter, into: list[Seen]) -> None:
                async for reply in streams.listen(wanted, None):
                    into.append(_events(reply))

            readers = [
                asyncio.ensure_future(collect(rkt.EventFilter(), replies[0])),  # the feed
                # A stream with an until_time translates for itself.
                asyncio.ensure_future(
                    collect(rkt.EventFilter(until_time=int(time.time()) + 60), replies[1])
                ),
            ]
            await listening(starts, 2)
            async with store.transaction() as tx:  # as the runtime's step does
                for pod_id in pods.values():
                    record = await tx.get(INSTANCE, pod_id)
                    assert record is not None
                    running_ = InstanceRecord.from_bytes(record.data)
                    stopped = running_.moved(
                        pb.STOPPED, "stopped", at_ns=time.time_ns(), step=running_.step + 1
                    )
                    await tx.update(INSTANCE, pod_id, stopped.to_bytes())
            exits = {("EVENT_TYPE_POD_EXITED", name) for name in pods}

            async def both_exited() -> bool:
                return all(exits <= {e for reply in got for e in reply} for got in replies)

            await eventually(both_exited, what="both pods' exits on both streams")
            for reader in readers:
                reader.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
            for got in replies:
                carrying = [reply for reply in got if exits & set(reply)]
                assert len(carrying) == 1, got
                assert exits <= set(carrying[0])

    run(scenario())
