from __future__ import annotations

import asyncio
import gc
import json
import tracemalloc
from typing import Any

import grpc
import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from app.gateway.admission import NO_AUTH
from app.gateway.errors import GatewayError
from app.gateway.routes import GatewayOptions, create_app
from tests.harness import uvicorn_serving

from .conftest import run, serving, shelf_registry
from .shelf import SERVICE, ShelfServicer, WritingShelfServicer, pb
from .wire import frame

# Both handler styles grpc.aio allows: yielding and iterating, or context.write() and read().
BOTH_STYLES = pytest.mark.parametrize("style", [ShelfServicer, WritingShelfServicer])


def lines(response: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.text.splitlines() if line]


def test_server_stream_as_ndjson() -> None:
    async def check() -> Any:
        async with serving() as served:
            return await served.http.get("/v1/shelves/s1/things", params={"count": 3})

    response = run(check())
    assert response.headers["content-type"] == "application/x-ndjson"
    names = [item["result"]["name"] for item in lines(response)]
    assert names == ["shelves/s1/things/0", "shelves/s1/things/1", "shelves/s1/things/2"]


@BOTH_STYLES
def test_server_stream_failure_midway_is_a_final_error_line(style: type[ShelfServicer]) -> None:
    async def check() -> Any:
        async with serving(servicer=style()) as served:
            return await served.http.get(
                "/v1/shelves/s1/things", params={"count": 5, "fail": "true", "fail_after": 2}
            )

    response = run(check())
    assert response.status_code == 200
    items = lines(response)
    assert [("result" in item) for item in items] == [True, True, False]
    assert items[-1]["error"] == {"code": 9, "message": "stopped at 2", "details": []}


@BOTH_STYLES
def test_server_stream_failure_before_the_first_message_gets_its_http_status(
    style: type[ShelfServicer],
) -> None:
    async def check() -> Any:
        async with serving(servicer=style()) as served:
            return await served.http.get(
                "/v1/shelves/s1/things", params={"count": 5, "fail": "true", "fail_after": 0}
            )

    response = run(check())
    assert response.status_code == 400
    assert response.json()["code"] == 9


def test_server_stream_as_sse() -> None:
    async def check() -> Any:
        async with serving() as served:
            return await served.http.get(
                "/v1/shelves/s1/things",
                params={"count": 2, "fail": "true", "fail_after": 1},
                headers={"accept": "text/event-stream"},
            )

    response = run(check())
    assert response.headers["content-type"] == "text/event-stream"
    events = response.text.split("\n\n")
    # The stream opens at once (an SSE comment), before the first event.
    assert events[0] == ": open"
    assert events[1].startswith("data: {")
    assert json.loads(events[1][len("data: ") :])["result"]["count"] == 0
    assert events[2].startswith("event: error\ndata: ")


def test_sse_opens_before_the_first_event_and_reports_early_failures_as_events() -> None:
    async def check() -> Any:
        async with serving() as served:
            return await served.http.get(
                "/v1/shelves/s1/things",
                params={"count": 2, "fail": "true", "fail_after": 0},
                headers={"accept": "text/event-stream"},
            )

    response = run(check())
    assert response.status_code == 200
    events = response.text.split("\n\n")
    assert events[0] == ": open"
    assert events[1].startswith("event: error\ndata: ")


def test_client_stream_from_ndjson_body() -> None:
    body = b'{"name": "a"}\n\n{"name": "b"}\n{"name": "c"}'

    async def check() -> Any:
        async with serving() as served:
            return await served.http.post(
                "/v1/things:collect", content=body, headers={"content-type": "application/x-ndjson"}
            )

    response = run(check())
    assert response.json() == {"count": 3, "names": ["a", "b", "c"]}


def test_client_stream_bad_line_is_400_naming_the_line() -> None:
    async def check() -> Any:
        async with serving() as served:
            return await served.http.post(
                "/v1/things:collect", content=b'{"name": "a"}\n{"nope": 1}\n'
            )

    response = run(check())
    assert response.status_code == 400
    assert "nope" in response.json()["message"]


@BOTH_STYLES
def test_bidi_half_duplex_over_post(style: type[ShelfServicer]) -> None:
    async def check() -> Any:
        async with serving(servicer=style()) as served:
            return await served.http.post(
                "/v1/things:chat", content=b'{"name": "a"}\n{"name": "b"}\n'
            )

    response = run(check())
    assert [item["result"]["name"] for item in lines(response)] == ["A", "B"]


@BOTH_STYLES
def test_streams_agree_with_grpc(style: type[ShelfServicer]) -> None:
    async def check() -> None:
        async with serving(servicer=style()) as served:
            rest = await served.http.get("/v1/shelves/s1/things", params={"count": 2})
            grpc_replies = [
                r
                async for r in served.stub.ListThings(
                    pb.ListThingsRequest(parent="shelves/s1", count=2)
                )
            ]
            assert [item["result"]["name"] for item in lines(rest)] == [
                r.name for r in grpc_replies
            ]
            summary = await served.stub.CollectThings(iter([pb.Thing(name="a")]))
            rest = await served.http.post("/v1/things:collect", content=b'{"name": "a"}')
            assert rest.json() == {"count": summary.count, "names": list(summary.names)}
            call = served.stub.ChatThings(iter([pb.Thing(name="x"), pb.Thing(name="fail")]))
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                _ = [r async for r in call]
            rest = await served.http.post(
                "/v1/things:chat", content=b'{"name": "x"}\n{"name": "fail"}'
            )
            assert lines(rest)[-1]["error"]["code"] == caught.value.code().value[0]
            assert lines(rest)[-1]["error"]["message"] == caught.value.details()

    run(check())


def live_app(servicer: ShelfServicer) -> Any:
    return create_app(shelf_registry(), {SERVICE: servicer}, GatewayOptions(authenticate=NO_AUTH))


def test_a_stream_nobody_serves_is_refused_before_any_event() -> None:
    """An SSE response starts at once when its call is accepted: a method without a servicer
    must be refused first, with its own status, not a 200 whose first event is the error."""

    async def check() -> httpx.Response:
        app = create_app(shelf_registry(), {}, GatewayOptions(authenticate=NO_AUTH))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://portico") as http:
            return await http.get("/v1/shelves/s1/things", headers={"accept": "text/event-stream"})

    response = run(check())
    assert response.status_code == 501, response.text
    assert response.json()["code"] == grpc.StatusCode.UNIMPLEMENTED.value[0]


@BOTH_STYLES
@pytest.mark.parametrize("protocol", ["rest", "connect"])
def test_a_stream_that_never_pauses_is_closed_when_its_client_goes_away(
    style: type[ShelfServicer], protocol: str
) -> None:
    """A servicer producing without a pause is mostly suspended at its yield while the reply
    goes out; the flow cancelled there must close it, so that its ``finally`` (a watch's
    unsubscribe) runs now. Left to the garbage collector (held off here, as a busy server's
    rarely runs), it once ran only whenever a collection found the generator."""
    servicer = style()

    async def check() -> None:
        async with uvicorn_serving(live_app(servicer)) as address, httpx.AsyncClient() as client:
            if protocol == "rest":
                request = client.build_request(
                    "GET", f"http://{address}/v1/shelves/s1/things", params={"count": 10**6}
                )
            else:
                request = client.build_request(
                    "POST",
                    f"http://{address}/api/portico.test.v1.Shelf/ListThings",
                    content=frame(pb.ListThingsRequest(count=10**6).SerializeToString()),
                    headers={"content-type": "application/connect+proto"},
                )
            response = await client.send(request, stream=True)
            await asyncio.wait_for(anext(response.aiter_bytes()), 2)
            await response.aclose()
            await asyncio.wait_for(servicer.stream_cancelled.wait(), 5)
            assert not servicer.stream_done

    gc.disable()
    try:
        run(check())
    finally:
        gc.enable()


@BOTH_STYLES
def test_messages_are_flushed_as_produced_and_disconnect_cancels(
    style: type[ShelfServicer],
) -> None:
    servicer = style()

    async def check() -> None:
        async with uvicorn_serving(live_app(servicer)) as address, httpx.AsyncClient() as client:
            url = f"http://{address}/v1/shelves/s1/things"
            params = {"count": 1000, "delay_ms": 50}
            async with client.stream("GET", url, params=params) as response:
                first = await asyncio.wait_for(anext(response.aiter_lines()), 2)
                assert json.loads(first)["result"]["count"] == 0
            await asyncio.wait_for(servicer.stream_cancelled.wait(), 5)
            assert not servicer.stream_done

    run(check())


@BOTH_STYLES
def test_bidi_over_websocket(style: type[ShelfServicer]) -> None:
    servicer = style()

    async def check() -> None:
        async with uvicorn_serving(live_app(servicer)) as address:
            async with connect(f"ws://{address}/v1/things:chat") as socket:
                await socket.send(json.dumps({"name": "a"}))
                assert json.loads(await socket.recv())["result"]["name"] == "A"
                await socket.send(json.dumps({"name": "b"}))
                assert json.loads(await socket.recv())["result"]["name"] == "B"
                await socket.send(json.dumps({"name": "fail"}))
                assert json.loads(await socket.recv())["error"]["code"] == 10
            async with connect(f"ws://{address}/v1/things:chat") as socket:
                await socket.send(json.dumps({"name": "c"}))
                await socket.send("")  # half-close
                replies = [json.loads(message) async for message in socket]
                assert replies == [{"result": json.loads(json.dumps(replies[0]["result"]))}]
                assert replies[0]["result"]["name"] == "C"

    run(check())


def test_a_websocket_conversation_ends_at_its_deadline() -> None:
    # Like NDJSON/SSE and Connect streams, the upgrade's grpc-timeout bounds the call: the
    # servicer waiting for the next message is cancelled and the client told why.
    servicer = ShelfServicer()

    async def check() -> None:
        async with uvicorn_serving(live_app(servicer)) as address:
            url = f"ws://{address}/v1/things:chat"
            async with connect(url, additional_headers={"grpc-timeout": "300m"}) as socket:
                await socket.send(json.dumps({"name": "a"}))
                assert json.loads(await socket.recv())["result"]["name"] == "A"
                # No more messages, no half-close: only the deadline can end it.
                ended = json.loads(await asyncio.wait_for(socket.recv(), 5))
                assert ended["error"]["code"] == grpc.StatusCode.DEADLINE_EXCEEDED.value[0]

    run(check())


def test_a_browser_websocket_passes_its_token_as_a_subprotocol() -> None:
    # Browsers cannot set headers on a WebSocket: the token comes as "bearer.<token>", and the
    # server accepts naming only "portico.json", never echoing the token.
    async def authenticate(method: Any, metadata: Any, peer: Any) -> str:
        if ("authorization", "Bearer good") not in metadata:
            raise GatewayError(grpc.StatusCode.UNAUTHENTICATED, "a bearer token is required")
        return "alice"

    app = create_app(
        shelf_registry(), {SERVICE: ShelfServicer()}, GatewayOptions(authenticate=authenticate)
    )

    async def check() -> None:
        async with uvicorn_serving(app) as address:
            url = f"ws://{address}/v1/things:chat"
            async with connect(url, subprotocols=["portico.json", "bearer.good"]) as socket:
                assert socket.subprotocol == "portico.json"
                await socket.send(json.dumps({"name": "a"}))
                assert json.loads(await socket.recv())["result"]["name"] == "A"
            # A refused caller never gets an open socket: the upgrade is answered 401.
            for offered in (["portico.json", "bearer.bad"], ["portico.json"]):
                with pytest.raises(InvalidStatus) as refused:
                    async with connect(url, subprotocols=offered):
                        pass
                response = refused.value.response
                assert response.status_code == 401
                status = json.loads(response.body)
                assert status["code"] == grpc.StatusCode.UNAUTHENTICATED.value[0]

    run(check())


def test_memory_stays_flat_on_a_long_stream() -> None:
    """20 MB streamed through a real server never piles up: frames go out as they are made."""
    # Each message carries ~8 KB: tracing costs per allocation, so few big messages keep it fast.
    parent = "p" * 8000

    async def check() -> tuple[int, int, int]:
        servicer = ShelfServicer()
        async with uvicorn_serving(live_app(servicer)) as address, httpx.AsyncClient() as client:
            url = f"http://{address}/v1/shelves/{parent}/things"
            tracemalloc.start()
            try:
                received = size = 0
                async with client.stream("GET", url, params={"count": 2_500}) as response:
                    async for line in response.aiter_lines():
                        received += bool(line)
                        size += len(line)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            return received, size, peak

    received, size, peak = run(check())
    assert received == 2_500
    assert size > 20_000_000
    assert peak < 8 * 1024 * 1024, f"peak traced memory {peak / 1e6:.1f} MB for 20 MB streamed"
