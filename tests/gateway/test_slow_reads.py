"""The body-read timeout: fires for a read that outlives it, and only for that read."""

from __future__ import annotations

import asyncio

import pytest

from app.gateway.http.slow_reads import slow_reads

from .conftest import run


def test_an_overdue_read_times_out_and_a_prompt_one_does_not() -> None:
    async def scenario() -> None:
        never = asyncio.Event()
        with pytest.raises(TimeoutError):
            await slow_reads().within(0.01, never.wait())
        assert await slow_reads().within(0.01, asyncio.sleep(0, "read")) == "read"

    run(scenario())


def test_someone_elses_cancellation_stays_a_cancellation() -> None:
    async def scenario() -> None:
        never = asyncio.Event()
        reader = asyncio.ensure_future(slow_reads().within(60, never.wait()))
        await asyncio.sleep(0)  # the read has begun
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader

    run(scenario())
