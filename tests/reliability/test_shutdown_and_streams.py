"""Item: SIGTERM ends open streams and the process, and idle streams stay alive.

``SIGTERM`` once never finished while an SSE or NDJSON stream was open (and gRPC kept answering).
Now readiness fails first, new calls are refused, every open stream ends with a final
``UNAVAILABLE`` "server shutting down" in its protocol's form, and the process exits 0 within
``PORTICO_SHUTDOWN_GRACE_SECONDS``. Idle streams carry keepalives, NDJSON answers its headers
without waiting for a first reply, and SSE frames carry the event revision as ``id:``, from
which a reconnect with ``Last-Event-ID`` resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from app.gateway.admission import NO_AUTH
from app.gateway.open_streams import OpenStreams
from app.gateway.routes import GatewayOptions, create_app
from app.grpc_server.server import create_server, start, stop
from app.store import ObjectStore
from gen.edgeproto import node_pb2, notice_pb2, notice_pb2_grpc
from tests.gateway.conftest import shelf_registry
from tests.gateway.shelf import SERVICE, ShelfServicer, pb, pb_grpc
from tests.harness import ADMIN_PASSWORD, run, running, uvicorn_serving
from tests.reliability.server import start_server

pytestmark = pytest.mark.slow  # seconds per test: scheduled first (tests/conftest.py)

EVENTS = "/v1/runtime/events"  # v1alpha.PublicAPI.ListenEvents: a watch
GRACE = 3.0
INSTANCE = {
    "name": "web",
    "uri": "docker://nginx:1.25",
    "resource": {"limit": {"cpu": 1, "memory": 256, "disk": 1}},
}


async def _forever(requests: asyncio.Queue[notice_pb2.Notice]) -> AsyncIterator[notice_pb2.Notice]:
    while True:
        yield await requests.get()


def test_sigterm_ends_open_streams_on_both_transports_and_exits_0(
    tmp_path: Path, http_server: str
) -> None:
    server = start_server(
        tmp_path / "data",
        env={"PORTICO_SHUTDOWN_GRACE_SECONDS": str(GRACE)},
        server=http_server,
    )
    process = server.process

    async def scenario() -> float:
        async with (
            httpx.AsyncClient(base_url=server.base_url, timeout=30) as http,
            grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel,
        ):
            login = {"username": "admin", "password": ADMIN_PASSWORD}
            token = (await http.post("/v1/auth:login", json=login)).json()["token"]
            auth = {"authorization": f"Bearer {token}"}
            sse_headers = {**auth, "accept": "text/event-stream"}
            async with (
                http.stream("GET", EVENTS, headers=sse_headers) as sse,
                http.stream("GET", EVENTS, headers=auth) as ndjson,
            ):
                # Both answer their headers although no event has come yet.
                assert sse.status_code == ndjson.status_code == 200
                assert ndjson.headers["content-type"] == "application/x-ndjson"
                # An instance that no node can run (there are none): its creation is a
                # stream that stays open too.
                created = http.stream(
                    "POST", "/v1/scheduler/instances", json=INSTANCE, headers=auth
                )
                async with created as creation:
                    assert creation.status_code == 200
                    # A gRPC bidirectional stream, live after its snapshot.
                    outgoing: asyncio.Queue[notice_pb2.Notice] = asyncio.Queue()
                    hello = notice_pb2.Notice(action=notice_pb2.VERSION, version=1)
                    hello.any.Pack(node_pb2.Node(key=node_pb2.NodeKey(name="crm")))
                    await outgoing.put(hello)
                    watch = notice_pb2_grpc.NotifyApiStub(channel).StreamNotice(
                        _forever(outgoing), metadata=tuple(auth.items())
                    )
                    while (await asyncio.wait_for(watch.read(), 10)).action != (
                        notice_pb2.SENDALL_END
                    ):
                        pass

                    signalled = time.monotonic()
                    process.send_signal(signal.SIGTERM)
                    sse_text = (await asyncio.wait_for(sse.aread(), 10)).decode()
                    ndjson_text = (await asyncio.wait_for(ndjson.aread(), 10)).decode()
                    creation_text = (await asyncio.wait_for(creation.aread(), 10)).decode()
                    try:
                        while True:
                            await asyncio.wait_for(watch.read(), 10)
                    except grpc.aio.AioRpcError as error:
                        grpc_end = (error.code(), error.details())

            last_event = sse_text.strip().split("\n\n")[-1]
            assert last_event.startswith("event: error\ndata: "), sse_text
            sse_status = json.loads(last_event.split("data: ", 1)[1])["error"]
            assert (sse_status["code"], sse_status["message"]) == (14, "server shutting down")
            for text in (ndjson_text, creation_text):
                status = json.loads(text.strip().split("\n")[-1])["error"]
                assert (status["code"], status["message"]) == (14, "server shutting down")
            assert grpc_end == (grpc.StatusCode.UNAVAILABLE, "server shutting down"), server.log()
            return signalled

    try:
        server.wait_ready()
        signalled = run(scenario())
        code = process.wait(timeout=GRACE + 10)
        took = time.monotonic() - signalled
    finally:
        server.kill()
    assert code == 0, server.log()
    assert took < GRACE + 5, f"exited {took:.1f} s after SIGTERM"
    # The streams' own clean-up ran before the store closed: nothing was left to fail later.
    assert "Traceback" not in server.log() and " ERROR " not in server.log(), server.log()


class _EndlessShelf(ShelfServicer):
    """Things as fast as the client takes them; its clean-up takes a moment, as a store write
    does (the edge stream unregisters its node)."""

    def __init__(self) -> None:
        super().__init__()
        self.cleaned_up = False

    async def ListThings(self, request: Any, context: Any) -> AsyncIterator[Any]:  # type: ignore[override]
        try:
            while True:
                yield pb.Thing(name="again")  # never waits but here: ends at this yield
        finally:
            await asyncio.sleep(0.5)
            self.cleaned_up = True


def test_a_grpc_stream_ended_by_shutdown_cleans_up_before_its_final_status() -> None:
    # The servicer's generator was left open at its yield, to be closed whenever it was
    # collected: at a server's exit that was after the store had closed, so its clean-up failed
    # with a traceback (and a node of the edge stream stayed registered).
    async def scenario() -> tuple[grpc.StatusCode, bool]:
        servicer = _EndlessShelf()
        streams = OpenStreams()
        server, port = create_server(
            "127.0.0.1:0",
            shelf_registry(),
            {SERVICE: servicer},
            authenticate=NO_AUTH,
            streams=streams,
        )
        await start(server)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call = pb_grpc.ShelfStub(channel).ListThings(pb.ListThingsRequest(parent="s"))
                await call.read()
                streams.close_all()
                try:
                    while True:
                        await call.read()
                except grpc.aio.AioRpcError as error:
                    return error.code(), servicer.cleaned_up
        finally:
            await stop(server, grace=1)

    code, cleaned_up = asyncio.run(scenario())
    assert code is grpc.StatusCode.UNAVAILABLE
    assert cleaned_up


def test_readiness_fails_and_new_calls_are_refused_once_shutting_down(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            auth = {"authorization": f"Bearer {token}"}
            assert (await server.http.get("/readyz")).status_code == 200
            health = health_pb2_grpc.HealthStub(server.channel).Watch(
                health_pb2.HealthCheckRequest()
            )
            assert (await health.read()).status == health_pb2.HealthCheckResponse.SERVING
            server.portico.begin_shutdown()
            assert (await server.http.get("/readyz")).status_code == 503
            # gRPC's health says so at once too, not once REST has drained.
            changed = await asyncio.wait_for(health.read(), 5)
            assert changed.status == health_pb2.HealthCheckResponse.NOT_SERVING
            health.cancel()
            refused = await server.http.get("/api/v1/version", headers=auth)
            assert refused.status_code == 503
            assert refused.json()["message"] == "server shutting down"
            refused = await server.http.get(EVENTS, headers=auth)
            assert refused.status_code == 503

    run(scenario())


async def _next_frame(lines: object, *, allow_keepalive: bool = False) -> str:
    """The next SSE frame (lines up to a blank one)."""
    frame: list[str] = []
    async for line in lines:  # type: ignore[attr-defined]
        if line == "":
            if frame:
                return "\n".join(frame)
            continue
        frame.append(line)
    raise AssertionError("the stream ended")


def test_idle_streams_carry_keepalives(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with (
            running(tmp_path, stream_heartbeat_seconds=0.2) as server,
            uvicorn_serving(server.portico.http_app) as address,
            httpx.AsyncClient(base_url=f"http://{address}", timeout=10) as http,
        ):
            auth = {"authorization": f"Bearer {await server.login()}"}
            sse_headers = {**auth, "accept": "text/event-stream"}
            async with http.stream("GET", EVENTS, headers=sse_headers) as sse:
                lines = sse.aiter_lines()
                assert await _next_frame(lines) == ": open"
                started = time.monotonic()
                assert await asyncio.wait_for(_next_frame(lines), 5) == ": keepalive"
                assert time.monotonic() - started < 2
            # The bytes on the wire, uncompressed (httpx asks for gzip unless told otherwise).
            plain = {**auth, "accept-encoding": "identity"}
            async with http.stream("GET", EVENTS, headers=plain) as ndjson:
                chunks = ndjson.aiter_raw()
                # An empty line, which readers of JSON lines skip.
                assert await asyncio.wait_for(anext(chunks), 5) == b"\n"

    run(scenario())


def test_no_stream_is_quiet_longer_than_the_heartbeat_interval() -> None:
    # Which ticks of the one ticker send a stream its keepalive, on the ticker's own clock: the
    # first must come no later than an interval after the stream last sent anything, wherever
    # that falls between ticks (a keepalive once a stream had been quiet a whole interval came
    # up to a tick late: 20 s apart with the default 15).
    async def first_keepalives() -> dict[float, float]:
        streams = OpenStreams(heartbeat_seconds=15)
        stream = streams.enter()
        stream.beat = _no_beat
        tick = streams.tick_seconds
        first = {}
        for last_sent in (0.0, 0.01, 2.5, tick - 0.01, tick):
            stream.last_sent = last_sent
            at = tick
            while not streams.due(at):
                at += tick
            first[last_sent] = at
        streams.leave(stream)
        return first

    for last_sent, beat_at in asyncio.run(first_keepalives()).items():
        assert last_sent < beat_at <= last_sent + 15, (last_sent, beat_at)


async def _no_beat() -> None:
    pass


class _WatchingShelf(ShelfServicer):
    """A watch: one Thing per stored thing written after the stream began."""

    def __init__(self, store: ObjectStore) -> None:
        super().__init__()
        self.store = store

    async def ListThings(self, request: Any, context: Any) -> AsyncIterator[Any]:  # type: ignore[override]
        start = await self.store.current_revision()
        async with contextlib.aclosing(self.store.watch("thing", start)) as events:
            async for event in events:
                yield pb.Thing(name=event.key)


def test_sse_frames_carry_revisions_and_a_reconnect_resumes_after_the_last(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        store = ObjectStore.open(f"sqlite:///{tmp_path / 'watch.db'}")
        app = create_app(
            shelf_registry(), {SERVICE: _WatchingShelf(store)}, GatewayOptions(authenticate=NO_AUTH)
        )
        sse_headers = {"accept": "text/event-stream"}
        url = "/v1/shelves/s/things"
        try:
            async with (
                uvicorn_serving(app) as address,
                httpx.AsyncClient(base_url=f"http://{address}", timeout=10) as http,
            ):
                async with http.stream("GET", url, headers=sse_headers) as sse:
                    lines = sse.aiter_lines()
                    assert await _next_frame(lines) == ": open"
                    for name in ("a", "b", "c"):
                        await store.create("thing", name, b"")
                    frames = [await asyncio.wait_for(_next_frame(lines), 10) for _ in range(3)]
                ids = []
                for frame, name in zip(frames, "abc", strict=True):
                    id_line, data_line = frame.split("\n")
                    assert json.loads(data_line[len("data: ") :])["result"]["name"] == name
                    ids.append(int(id_line[len("id: ") :]))
                assert ids == sorted(ids)
                # The client saw "a" only; "b" and "c" were written before it came back, and
                # a watch from the reconnect alone would never send them.
                resumed = {**sse_headers, "last-event-id": str(ids[0])}
                async with http.stream("GET", url, headers=resumed) as sse:
                    lines = sse.aiter_lines()
                    assert await _next_frame(lines) == ": open"
                    again = [await asyncio.wait_for(_next_frame(lines), 10) for _ in range(2)]
                assert again == frames[1:]
        finally:
            await store.close()

    run(scenario())
