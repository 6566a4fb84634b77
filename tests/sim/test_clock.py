"""The simulation clock: steps from a fixed origin, real sleeping in steps, a manual test double."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest

from app.sim.clock import DEFAULT_ORIGIN, ManualClock, SimClock

ORIGIN_NS = int(DEFAULT_ORIGIN.timestamp()) * 1_000_000_000


def fixed_wall(ns: int):
    return lambda: ns


def test_steps_count_from_the_origin_in_whole_steps():
    clock = SimClock(0.5, wall_ns=fixed_wall(ORIGIN_NS + 10_400_000_000))
    assert clock.now() == 20  # 10.4 s at 0.5 s per step
    assert clock.steps_since(15) == 5
    assert clock.steps_since(25) == -5


def test_a_restarted_clock_continues_at_the_same_step():
    wall = fixed_wall(ORIGIN_NS + 3_600_000_000_000)
    assert SimClock(1.0, wall_ns=wall).now() == SimClock(1.0, wall_ns=wall).now() == 3600


def test_time_of_maps_a_step_to_its_wall_clock_start():
    clock = SimClock(0.25)
    assert clock.time_of(0) == DEFAULT_ORIGIN
    assert clock.time_of(8) == DEFAULT_ORIGIN + timedelta(seconds=2)


def test_time_of_the_current_step_is_not_after_now():
    clock = SimClock(0.001)
    assert clock.time_of(clock.now()) <= datetime.now(UTC)


def test_a_custom_origin_moves_step_zero():
    origin = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
    clock = SimClock(
        1.0, origin=origin, wall_ns=fixed_wall(int(origin.timestamp() * 1e9) + 5 * 10**9)
    )
    assert clock.now() == 5
    assert clock.time_of(5) == origin + timedelta(seconds=5)


@pytest.mark.parametrize("bad", [0, -1.0])
def test_step_seconds_must_be_positive(bad):
    with pytest.raises(ValueError, match="step_seconds"):
        SimClock(bad)
    with pytest.raises(ValueError, match="step_seconds"):
        ManualClock(bad)


def test_a_naive_origin_is_refused():
    with pytest.raises(ValueError, match="timezone"):
        SimClock(1.0, origin=datetime(2024, 1, 1))


def test_sleep_steps_sleeps_until_the_steps_have_begun():
    clock = SimClock(0.002)

    async def sleep_three() -> tuple[int, int]:
        before = clock.now()
        await clock.sleep_steps(3)
        return before, clock.now()

    started = time.perf_counter()
    before, after = asyncio.run(sleep_three())
    assert after >= before + 3
    assert time.perf_counter() - started < 0.5


def test_sleep_steps_of_zero_returns_at_once():
    clock = SimClock(10.0)
    started = time.perf_counter()
    asyncio.run(clock.sleep_steps(0))
    assert time.perf_counter() - started < 0.1


def test_manual_clock_stands_still_until_advanced():
    clock = ManualClock(step_seconds=60, start=7)
    assert clock.now() == 7
    assert clock.advance() == 8
    assert clock.advance(10) == 18
    assert clock.steps_since(8) == 10
    assert clock.time_of(2) == DEFAULT_ORIGIN + timedelta(minutes=2)


def test_manual_clock_cannot_go_back():
    with pytest.raises(ValueError, match="cannot go back"):
        ManualClock().advance(-1)


def test_manual_clock_wakes_sleepers_when_their_step_comes():
    clock = ManualClock()

    async def scenario() -> list[str]:
        woke: list[str] = []

        async def sleeper(name: str, steps: int) -> None:
            await clock.sleep_steps(steps)
            woke.append(name)

        tasks = [asyncio.create_task(sleeper("two", 2)), asyncio.create_task(sleeper("five", 5))]
        await asyncio.sleep(0)
        clock.advance(1)
        await asyncio.sleep(0)
        assert woke == []
        clock.advance(1)
        await asyncio.sleep(0)
        assert woke == ["two"]
        clock.advance(3)
        await asyncio.gather(*tasks)
        return woke

    assert asyncio.run(scenario()) == ["two", "five"]


def test_a_cancelled_sleeper_does_not_break_advance():
    clock = ManualClock()

    async def scenario() -> None:
        task = asyncio.create_task(clock.sleep_steps(1))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        clock.advance(1)

    asyncio.run(scenario())
    assert clock.now() == 1
