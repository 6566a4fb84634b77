"""The simulation's clock: time advances in whole steps whose wall-clock length is a setting.

Steps count from a fixed origin (not from process start), so a server restarted with the same
``step_seconds`` continues at the step it would have reached anyway and persisted step numbers
stay meaningful. :class:`ManualClock` is the test double: it moves only when told to.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from app.observe.metrics import RECORDING, SIM_STEP_LAG_SECONDS

# A fixed origin keeps step numbers stable across restarts and replicas.
DEFAULT_ORIGIN = datetime(2024, 1, 1, tzinfo=UTC)
_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Clock(Protocol):
    """What the simulation needs from a clock: the current step and its wall-clock time."""

    @property
    def step_seconds(self) -> float: ...

    def now(self) -> int: ...

    def steps_since(self, step: int) -> int: ...

    def time_of(self, step: int) -> datetime: ...

    async def sleep_steps(self, n: int = 1) -> None: ...


def _check_step_seconds(step_seconds: float) -> None:
    if not step_seconds > 0:
        raise ValueError(f"step_seconds must be positive, got {step_seconds!r}")


class SimClock:
    """A clock on wall time: step ``n`` begins ``n * step_seconds`` after ``origin``.

    ``wall_ns`` can be replaced to test step arithmetic; :meth:`sleep_steps` needs a wall clock
    that moves.
    """

    def __init__(
        self,
        step_seconds: float,
        *,
        origin: datetime = DEFAULT_ORIGIN,
        wall_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        _check_step_seconds(step_seconds)
        if origin.tzinfo is None:
            raise ValueError("origin must be timezone-aware")
        self._step_seconds = step_seconds
        # Integer nanoseconds: step boundaries are exact, so sleeping to one lands on it.
        self._step_ns = max(1, round(step_seconds * 1e9))
        self._origin = origin
        self._origin_ns = (origin - _UNIX_EPOCH) // timedelta(microseconds=1) * 1000
        self._wall_ns = wall_ns

    @property
    def step_seconds(self) -> float:
        """Wall-clock seconds per step."""
        return self._step_seconds

    def now(self) -> int:
        """The current step."""
        return (self._wall_ns() - self._origin_ns) // self._step_ns

    def steps_since(self, step: int) -> int:
        """Whole steps elapsed since ``step`` (negative if ``step`` is in the future)."""
        return self.now() - step

    def time_of(self, step: int) -> datetime:
        """The wall-clock time at which ``step`` begins."""
        return self._origin + timedelta(microseconds=step * self._step_ns // 1000)

    async def sleep_steps(self, n: int = 1) -> None:
        """Sleep until ``n`` more steps have begun (``n <= 0`` only yields to the loop)."""
        if n <= 0:
            await asyncio.sleep(0)
            return
        target = self.now() + n
        while (remaining_ns := self._origin_ns + target * self._step_ns - self._wall_ns()) > 0:
            # The event loop's timer may wake a hair early; the loop re-checks the wall clock.
            await asyncio.sleep(remaining_ns / 1e9)
        if RECORDING.on:
            # How late this wake-up is: a busy loop makes the whole simulation fall behind.
            SIM_STEP_LAG_SECONDS.observe(-remaining_ns / 1e9)


class ManualClock:
    """A clock for tests that stands still until :meth:`advance` moves it."""

    def __init__(
        self, step_seconds: float = 1.0, *, start: int = 0, origin: datetime = DEFAULT_ORIGIN
    ) -> None:
        _check_step_seconds(step_seconds)
        self._step_seconds = step_seconds
        self._step = start
        self._origin = origin
        self._sleepers: list[tuple[int, asyncio.Future[None]]] = []

    @property
    def step_seconds(self) -> float:
        """Nominal seconds per step, used only to map steps to timestamps."""
        return self._step_seconds

    def now(self) -> int:
        """The current step."""
        return self._step

    def steps_since(self, step: int) -> int:
        """Whole steps elapsed since ``step``."""
        return self._step - step

    def time_of(self, step: int) -> datetime:
        """The nominal wall-clock time at which ``step`` begins."""
        return self._origin + timedelta(seconds=step * self._step_seconds)

    def advance(self, n: int = 1) -> int:
        """Move the clock ``n`` steps on, wake sleepers whose step has come, return the step."""
        if n < 0:
            raise ValueError(f"a clock cannot go back: advance({n})")
        self._step += n
        waiting = []
        for target, future in self._sleepers:
            if future.done():
                continue
            if target <= self._step:
                future.set_result(None)
            else:
                waiting.append((target, future))
        self._sleepers = waiting
        return self._step

    async def sleep_steps(self, n: int = 1) -> None:
        """Wait until :meth:`advance` has moved the clock ``n`` steps on."""
        if n <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._step + n, future))
        await future
