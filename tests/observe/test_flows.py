"""Every flow of the gateway counts its calls: REST server streams (NDJSON) and WebSocket chats,
with messages sent, and a stream that fails midway counted by its code under HTTP 200."""

from __future__ import annotations

import json
from typing import Any

import httpx
from websockets.asyncio.client import connect

from app.gateway.admission import NO_AUTH
from app.gateway.routes import GatewayOptions, create_app
from app.observe.calls import Telemetry
from tests.gateway.conftest import run, shelf_registry
from tests.gateway.shelf import SERVICE, RevisionedShelf, ShelfServicer
from tests.harness import uvicorn_serving
from tests.observe.probes import delta, parse

LIST = f"{SERVICE}.ListThings"
CHAT = f"{SERVICE}.ChatThings"


def _metered(servicer: object) -> Any:
    """The shelf's gateway with metrics on and served at /metrics, no authentication."""
    options = GatewayOptions(
        authenticate=NO_AUTH, telemetry=Telemetry(metrics=True), metrics_endpoint=True
    )
    return create_app(shelf_registry(), {SERVICE: servicer}, options)


def test_rest_streams_and_websocket_chats_are_counted_with_their_messages() -> None:
    app = _metered(ShelfServicer())

    async def check() -> tuple[str, str]:
        async with uvicorn_serving(app) as address, httpx.AsyncClient() as client:
            base = f"http://{address}"
            before = (await client.get(f"{base}/metrics")).text
            url = f"{base}/v1/shelves/s1/things"
            await client.get(url, params={"count": 3})
            await client.get(url, params={"count": 5, "fail": "true", "fail_after": 2})
            async with connect(f"ws://{address}/v1/things:chat") as socket:
                for name in ("a", "b", "fail"):
                    await socket.send(json.dumps({"name": name}))
                    await socket.recv()
            return before, (await client.get(f"{base}/metrics")).text

    before_text, after_text = run(check())
    before, after = parse(before_text), parse(after_text)

    def calls(transport: str, rpc: str, code: str, http_status: str) -> float:
        labels = {"transport": transport, "rpc": rpc, "code": code, "http_status": http_status}
        return delta(before, after, "portico_requests_total", **labels)

    def sent(transport: str, rpc: str) -> float:
        labels = {"transport": transport, "rpc": rpc}
        return delta(before, after, "portico_stream_messages_sent_total", **labels)

    assert calls("rest", LIST, "OK", "200") == 1
    assert calls("rest", LIST, "FAILED_PRECONDITION", "200") == 1  # failed after two messages
    assert sent("rest", LIST) == 3 + 2
    assert calls("websocket", CHAT, "ABORTED", "") == 1
    assert sent("websocket", CHAT) == 2
    assert (
        parse(after_text)[
            ("portico_open_streams", frozenset({"transport": "rest", "rpc": LIST}.items()))
        ]
        == 0
    )


def test_a_304_is_counted_as_a_304() -> None:
    app = _metered(RevisionedShelf())

    async def check() -> tuple[str, str]:
        async with uvicorn_serving(app) as address, httpx.AsyncClient() as client:
            base = f"http://{address}"
            before = (await client.get(f"{base}/metrics")).text
            url = f"{base}/v1/shelves/s/things/a"
            assert (await client.get(url, headers={"if-none-match": '"42"'})).status_code == 304
            return before, (await client.get(f"{base}/metrics")).text

    before_text, after_text = run(check())
    labels = {"transport": "rest", "rpc": f"{SERVICE}.GetThing", "code": "OK"}
    counted = delta(
        parse(before_text), parse(after_text), "portico_requests_total", **labels, http_status="304"
    )
    assert counted == 1
