"""The pyvoy worker's app in process: what it changes of the ASGI events it passes on."""

from __future__ import annotations

from typing import Any

from app.server.pyvoy_app import _dropped_once_gone
from tests.harness import run


def test_a_send_after_the_client_went_away_is_dropped_as_uvicorn_drops_it() -> None:
    # pyvoy raises OSError (ClientDisconnectedError) where uvicorn drops the event quietly: a
    # stream's flow must hear of the disconnect from receive, not as its servicer failing.
    sent: list[Any] = []

    async def gone(message: Any) -> None:
        sent.append(message)
        raise ConnectionResetError("client disconnected")

    async def scenario() -> None:
        send = _dropped_once_gone(gone)
        await send({"type": "http.response.body", "body": b"late", "more_body": True})

    run(scenario())
    assert sent == [{"type": "http.response.body", "body": b"late", "more_body": True}]
