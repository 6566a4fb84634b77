"""A request body read whole (every unary call with one): however many events it comes in, past
its limit, cut off when too slow, and a client going away meanwhile."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from app.gateway.errors import GatewayError
from app.gateway.http_io import read_body

from .conftest import run


def events(*messages: dict[str, Any]) -> Any:
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        if not queue:
            await asyncio.Event().wait()  # a client that sends nothing more
        return queue.pop(0)

    return receive


def chunk(body: bytes, more: bool) -> dict[str, Any]:
    return {"type": "http.request", "body": body, "more_body": more}


def read(receive: Any, limit: int = 100, timeout: float = 60) -> bytes:
    async def scenario() -> bytes:
        return await read_body(receive, {b"content-length": b"6"}, limit, timeout)

    return run(scenario())


def test_a_body_in_one_event_or_several_is_read_whole() -> None:
    assert read(events(chunk(b"abcdef", False))) == b"abcdef"
    assert read(events(chunk(b"ab", True), chunk(b"cd", True), chunk(b"ef", False))) == b"abcdef"


def test_a_body_past_the_limit_is_refused_with_413() -> None:
    with pytest.raises(GatewayError) as refused:
        read(events(chunk(b"abc", True), chunk(b"def", False)), limit=5)
    assert refused.value.http_status == 413


def test_a_client_that_goes_away_mid_body_ends_the_call_cancelled() -> None:
    with pytest.raises(GatewayError) as ended:
        read(events(chunk(b"abc", True), {"type": "http.disconnect"}))
    assert ended.value.code == grpc.StatusCode.CANCELLED


def test_a_body_that_stops_coming_is_cut_off_with_408() -> None:
    with pytest.raises(GatewayError) as cut:
        read(events(chunk(b"abc", True)), timeout=0.01)  # the sweep fires within a second
    assert cut.value.http_status == 408
    assert "not received within" in cut.value.message
