"""What the HTTP connection tells a call about its client going away (``ON_DISCONNECT``)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from app.gateway.invoker import ON_DISCONNECT
from tests.harness import eventually, run, uvicorn_serving


class Watching:
    """An app whose request registers three callbacks with its connection: one before the
    client goes, one it forgets again, and one once the client has gone."""

    def __init__(self) -> None:
        self.heard: list[str] = []
        self.watching = asyncio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        watch = scope["extensions"][ON_DISCONNECT]["watch"]
        watch(lambda: self.heard.append("before"))
        forget = watch(lambda: self.heard.append("forgotten"))
        forget()
        self.watching.set()
        while (await receive())["type"] != "http.disconnect":
            pass
        await eventually(self._heard_before, what="the callback registered before")
        watch(lambda: self.heard.append("after"))

    async def _heard_before(self) -> bool:
        return "before" in self.heard


def test_a_call_hears_once_that_its_client_went_away_even_if_it_asks_late() -> None:
    async def scenario() -> None:
        app = Watching()
        async with uvicorn_serving(app) as at:
            host, port = at.split(":")
            with socket.create_connection((host, int(port)), timeout=10) as connection:
                connection.sendall(b"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n")
                await asyncio.wait_for(app.watching.wait(), 10)
            assert app.heard == []  # nothing while the client was there

            async def heard_after() -> bool:
                return "after" in app.heard

            await eventually(heard_after, what="the callback registered after the loss")
            # The forgotten one would have run with "before": never, and each of them once.
            assert app.heard == ["before", "after"]

    run(scenario())
