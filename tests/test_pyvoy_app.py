"""The pyvoy worker's app in process: what it changes of the ASGI events it passes on."""

from __future__ import annotations

import asyncio
from typing import Any

from app.server.pyvoy_app import PIECE_BYTES, PyvoyApp, _replies_to
from tests.harness import run


def test_a_send_after_the_client_went_away_is_dropped_as_uvicorn_drops_it() -> None:
    # pyvoy raises OSError (ClientDisconnectedError) where uvicorn drops the event quietly: a
    # stream's flow must hear of the disconnect from receive, not as its servicer failing.
    sent: list[Any] = []

    async def gone(message: Any) -> None:
        sent.append(message)
        raise ConnectionResetError("client disconnected")

    async def scenario() -> None:
        send = _replies_to(gone)
        await send({"type": "http.response.body", "body": b"late", "more_body": True})

    run(scenario())
    assert sent == [{"type": "http.response.body", "body": b"late", "more_body": True}]


def test_a_large_body_goes_out_in_pieces_each_once_envoy_took_the_last() -> None:
    # pyvoy holds a piece sent with more_body until the client's stream is below its buffers'
    # high watermark; a body sent whole is buffered whole, whatever the client reads.
    sent: list[tuple[int, bool]] = []
    taken: list[asyncio.Future[None]] = []

    async def envoy(message: Any) -> None:
        sent.append((len(message["body"]), message.get("more_body", False)))
        if message.get("more_body"):
            taken.append(asyncio.get_running_loop().create_future())
            await taken[-1]

    async def scenario() -> None:
        send = _replies_to(envoy)
        await send({"type": "http.response.body", "body": b"small"})
        assert sent == [(5, False)]
        body = bytes(PIECE_BYTES * 2 + 10)
        reply = asyncio.ensure_future(send({"type": "http.response.body", "body": body}))
        await asyncio.sleep(0.01)
        assert sent[1:] == [(PIECE_BYTES, True)]  # the next waits until this one is taken
        taken[0].set_result(None)
        await asyncio.sleep(0.01)
        assert sent[2:] == [(PIECE_BYTES, True)]
        taken[1].set_result(None)
        await reply
        assert sent[3:] == [(10, False)]

    run(scenario())


class EmptyRecvCallable:
    """pyvoy's receive for a request whose body ended with its headers, by its name."""

    def __init__(self, event: str) -> None:
        self.event = event

    async def __call__(self) -> dict[str, Any]:
        return {"type": self.event}


def test_a_stream_reset_before_its_turn_is_dropped_unanswered_while_the_loop_is_behind() -> None:
    # A flood of resets fills the loop's queue with streams nobody waits for any more: the app
    # works none of them out.
    answered: list[str] = []

    async def http(scope: Any, receive: Any, send: Any) -> None:
        answered.append(scope["path"])

    async def scenario() -> None:
        app = PyvoyApp(lambda settings: None)
        app.http = http
        app.behind = True
        for path, event in (("/reset", "http.disconnect"), ("/open", "http.request")):
            scope = {"type": "http", "path": path}
            await app(scope, EmptyRecvCallable(event), _never_sent)

    run(scenario())
    assert answered == ["/open"]


async def _never_sent(message: Any) -> None:
    raise AssertionError(message)
