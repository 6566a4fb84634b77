"""ListenEvents over SSE resumes after ``Last-Event-ID``: an EventSource that reconnects gets the
events of every transition written while it was away, each once and in order, then live ones."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx

from gen.scheduler import scheduler_pb2 as pb
from gen.scheduler import scheduler_pb2_grpc as pb_grpc
from tests.harness import Running, run, running, uvicorn_serving
from tests.services.kudo.world import bearer, headers, instance, wait_status

EVENTS = "/v1/runtime/events"
Frame = tuple[int, list[tuple[str, str]]]  # an SSE id and its events as (type, subject)


async def _create(server: Running, token: str, name: str) -> str:
    stub = pb_grpc.InstanceServiceStub(server.channel)
    call = stub.Create(instance(name), metadata=bearer(token))
    first = await anext(call.__aiter__())
    call.cancel()
    return first.id


async def _read_until(frames: AsyncIterator[Frame], *wanted: tuple[str, str]) -> list[Frame]:
    """Frames up to the one that completes ``wanted`` (fails if they do not come within 10 s)."""
    got: list[Frame] = []
    while not all(any(w in events for _, events in got) for w in wanted):
        got.append(await asyncio.wait_for(anext(frames), 10))
    return got


async def _read(frames: AsyncIterator[Frame], count: int) -> list[Frame]:
    """The frames of the next ``count`` events (fails if they do not come within 10 s)."""
    got: list[Frame] = []
    while sum(len(events) for _, events in got) < count:
        got.append(await asyncio.wait_for(anext(frames), 10))
    return got


async def _frames(lines: AsyncIterator[str]) -> AsyncIterator[Frame]:
    """Each SSE frame's ``id:`` and its events as (type, pod or image id); comments skipped."""
    frame: dict[str, str] = {}
    async for line in lines:
        if line:
            if not line.startswith(":"):
                field, _, value = line.partition(": ")
                frame[field] = value
            continue
        if frame:
            events = json.loads(frame["data"])["result"]["events"]
            yield int(frame["id"]), [(event["type"], event["id"]) for event in events]
            frame = {}


def test_a_reconnect_with_last_event_id_gets_the_missed_events_once_in_order(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            sse = {**headers(token), "accept": "text/event-stream"}
            async with (
                uvicorn_serving(server.portico.http_app) as address,
                httpx.AsyncClient(base_url=f"http://{address}", timeout=10) as http,
                # A client that stays: what the one that leaves must get in the end.
                http.stream("GET", EVENTS, headers=sse) as staying,
            ):
                everything = _frames(staying.aiter_lines())
                async with http.stream("GET", EVENTS, headers=sse) as leaving:
                    web = await _create(server, token, "web")
                    first = await asyncio.wait_for(anext(_frames(leaving.aiter_lines())), 10)
                # Away: web starts and stops, cache starts.
                await wait_status(server, web, pb.RUNNING)
                cache = await _create(server, token, "cache")
                await wait_status(server, cache, pb.RUNNING)
                stop = await http.post(
                    f"/v1/scheduler/instances/{web}:stop", json={}, headers=headers(token)
                )
                assert stop.status_code == 200, stop.text
                await wait_status(server, web, pb.STOPPED)
                seen = await _read_until(
                    everything,
                    ("EVENT_TYPE_POD_EXITED", web),
                    ("EVENT_TYPE_APP_STARTED", cache),
                )
                # What the client that left has not had: everything after the id it saw last.
                after = [(i, events) for i, events in seen if i > first[0]]
                missed = [event for _, events in after for event in events]
                assert len(missed) >= 6  # web started and stopped, cache started

                resumed = {**sse, "last-event-id": str(first[0])}
                async with http.stream("GET", EVENTS, headers=resumed) as back:
                    frames = _frames(back.aiter_lines())
                    again = await _read(frames, len(missed))
                    assert [event for _, events in again for event in events] == missed
                    assert [frame_id for frame_id, _ in again] == [i for i, _ in after]
                    # Then live ones, and nothing sent twice before them.
                    await http.post(
                        f"/v1/scheduler/instances/{cache}:stop", json={}, headers=headers(token)
                    )
                    live = await _read(frames, 2)
                    assert [event for _, events in live for event in events] == [
                        ("EVENT_TYPE_APP_EXITED", cache),
                        ("EVENT_TYPE_POD_EXITED", cache),
                    ]

    run(scenario())
