"""The server's open streams, on both transports: kept alive while idle, ended on shutdown.

A stream registers the task that runs it. One ticker (not a timer per stream) sends keepalives
so that no HTTP stream is quiet longer than the heartbeat interval, so proxies keep idle watches
open. On shutdown every registered task is cancelled; the flow that runs it sees
:attr:`OpenStreams.closing` and ends its stream with a final ``UNAVAILABLE`` status ("server
shutting down") in its protocol's form, instead of the abrupt end a cancellation would be.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import grpc

from app.gateway.errors import GatewayError
from app.settings import limits

SHUTTING_DOWN = "server shutting down"

Beat = Callable[[], Awaitable[None]]


def shutting_down() -> GatewayError:
    """What a call is answered once the server is shutting down."""
    return GatewayError(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)


class Stream:
    """One open stream: its task, and how to send it a keepalive once its headers are out."""

    __slots__ = ("beat", "ending", "last_sent", "outside", "task")

    def __init__(self, task: asyncio.Task[object], now: float) -> None:
        self.task = task
        self.last_sent = now
        self.beat: Beat | None = None
        # Set while the task is in code that swallows a cancellation (grpc.aio sending a reply):
        # the shutdown then only sets ``ending``, which the stream's flow checks when back.
        self.outside = False
        self.ending = False

    def sent(self) -> None:
        """Something went out: the stream is not idle."""
        self.last_sent = asyncio.get_running_loop().time()


class OpenStreams:
    """Every open stream of one server."""

    def __init__(self, heartbeat_seconds: float = limits.DEFAULT_HEARTBEAT_SECONDS) -> None:
        self.heartbeat_seconds = heartbeat_seconds
        self.closing = False
        self._streams: dict[asyncio.Task[object], Stream] = {}
        self._ticker: asyncio.Task[None] | None = None
        self._beating: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._streams)

    def enter(self) -> Stream:
        """Register the current task's stream; refused once the server is shutting down."""
        if self.closing:
            raise shutting_down()
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        stream = self._streams[task] = Stream(task, loop.time())
        if self._ticker is None or self._ticker.done():
            self._ticker = loop.create_task(self._tick())
        return stream

    def leave(self, stream: Stream) -> None:
        """The stream has ended."""
        self._streams.pop(stream.task, None)

    def ended_by_shutdown(self) -> bool:
        """Whether the current task's stream was ended by the shutdown (whatever its code made
        of the cancellation); if so, the task carries on to send the final status, as if it had
        not been cancelled."""
        task = asyncio.current_task()
        stream = self._streams.get(task)  # type: ignore[arg-type]
        if task is None or stream is None or not stream.ending:
            return False
        while task.cancelling():
            task.uncancel()
        return True

    def call_ended_by_shutdown(self) -> bool:
        """Whether the current task, a call that is not a stream, is being cancelled by the
        shutdown (the HTTP server cancels the calls still running when the grace ends); if so,
        the task carries on to answer UNAVAILABLE, as a refusal, rather than the HTTP server's
        500 for a cancelled request."""
        task = asyncio.current_task()
        if not self.closing or task is None or not task.cancelling():
            return False
        while task.cancelling():
            task.uncancel()
        return True

    def close_all(self) -> None:
        """Refuse new streams and end every open one."""
        self.closing = True
        for task, stream in list(self._streams.items()):
            stream.ending = True
            if not stream.outside:
                task.cancel(SHUTTING_DOWN)
        if self._ticker is not None:
            self._ticker.cancel()

    def due(self, now: float) -> list[tuple[Stream, Beat]]:
        """The streams that get a keepalive at the tick at ``now``: those that would be quiet
        longer than the heartbeat interval by the next tick. (Waiting until a stream had been
        quiet a whole interval would let the gap grow to an interval and a tick.)"""
        latest = now + self.tick_seconds - self.heartbeat_seconds
        return [
            (s, s.beat)
            for s in self._streams.values()
            if s.beat is not None and s.last_sent <= latest
        ]

    @property
    def tick_seconds(self) -> float:
        return self.heartbeat_seconds / 3

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while self._streams:
            await asyncio.sleep(self.tick_seconds)
            now = loop.time()
            for stream, beat in self.due(now):
                stream.last_sent = now
                beating = loop.create_task(_quietly(beat()))
                self._beating.add(beating)
                beating.add_done_callback(self._beating.discard)


async def _quietly(beat: Awaitable[None]) -> None:
    # A keepalive to a client that has gone is no news: its stream ends on the disconnect.
    with contextlib.suppress(Exception):
        await beat
