"""The ASGI app one pyvoy (Envoy) process runs: a server built from the ``PORTICO_*`` variables
its supervisor set (:mod:`app.server.pyvoy_server`), started and stopped by the ASGI lifespan.
Which server (``portico serve``'s or the proxy's) the supervisor names in
``PORTICO_APPLICATION``; :mod:`app.server.pyvoy_worker` is the module Envoy loads.

Envoy owns the process's signals, and a SIGTERM to it closes every connection at once. So the
graceful stop is the supervisor's word instead: it connects over a local socket, and on
``drain`` the server fails readiness, refuses new calls, ends open streams with their final
status, gives calls in flight the grace (then answers them UNAVAILABLE), and says ``drained``;
only then is Envoy stopped. If the supervisor goes away, the server drains and stops by itself.
A ``reload`` line (the supervisor's SIGHUP) asks a server that can reload to do so.

pyvoy runs WebSocket connections in a network filter with an event loop (and thread) of its
own; Portico lives on the HTTP filter's loop. So that filter runs :data:`websocket_app`, without
a lifespan, which hands each connection to :data:`app` on its loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.types import Receive, Scope, Send

from app.observe import tracing
from app.observe.logs import configure_logging
from app.server.application import Served, request_reload
from app.server.envoy_limits import STREAM_WINDOW_BYTES
from app.server.process import STARTUP_REFUSALS, settle_heap
from app.settings.config import ConfigurationError, Settings

SUPERVISOR_ENV = "PORTICO_SUPERVISOR"  # the supervisor's socket, in the abstract namespace
# What a worker builds: the application's "module:callable" (app.server.application).
APPLICATION_ENV = "PORTICO_APPLICATION"
READY, DRAIN, DRAINED, RELOAD = b"ready", b"drain", b"drained", b"reload"
# How often a stream whose request has ended asks pyvoy whether its client is still there.
DISCONNECT_POLL_FIRST_SECONDS = 0.05
DISCONNECT_POLL_MAX_SECONDS = 1.0
# A reply's body larger than this is handed to Envoy in pieces of it, each once Envoy took the
# last: pyvoy holds the next piece while the stream is past its buffers' high watermark (one
# HTTP/2 stream window, or the connection's buffer), so a client that reads nothing holds about
# a window and two pieces, not the whole reply (a body handed over at once is buffered whole,
# whatever the client reads). Envoy ends a stream that stays stalled (app/server/envoy_limits.py).
PIECE_BYTES = STREAM_WINDOW_BYTES // 2
# pyvoy's receive for a request whose body ended with its headers: it answers at once, with the
# disconnect if the client has reset the stream already.
_ENDED_REQUEST = "EmptyRecvCallable"
# How often the loop's lateness is looked at, and how late it is when calls queue for their turn
# (then a call asks first whether its stream was reset while it waited).
LATENESS_CHECK_SECONDS = 0.1
BEHIND_SECONDS = 0.05

log = logging.getLogger("portico")


class PyvoyApp:
    """A server's HTTP app under pyvoy, with the lifespan and drain described above; ``build``
    makes the server from the settings."""

    def __init__(self, build: Callable[[Settings], Served]) -> None:
        self.build = build
        self.portico: Served | None = None
        self.loop: asyncio.AbstractEventLoop | None = None  # the HTTP filter's, Portico's
        self.http: Any = None
        self.in_flight: set[asyncio.Task[Any]] = set()
        self._supervised: asyncio.Task[None] | None = None
        self._drained = asyncio.Event()
        # Whether the loop runs late, calls queueing for their turn (see _watch_lateness).
        self.behind = False
        self._lateness: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            self.loop = asyncio.get_running_loop()
            await self._lifespan(receive, send)
            return
        task = asyncio.current_task(self.loop)  # the loop known: one lookup fewer per request
        assert task is not None
        self.in_flight.add(task)
        try:
            if scope["type"] == "http":
                # Calls queue while the loop is behind (a flood of resets fills the queue with
                # them): one whose stream was reset while it waited is answered to nobody, so
                # it is not worked out. A call that did not wait is not asked.
                if (
                    self.behind
                    and type(receive).__name__ == _ENDED_REQUEST
                    and (await receive())["type"] == "http.disconnect"
                ):
                    return
                receive = _BodyThenDisconnect(receive)
            await self.http(scope, receive, _replies_to(send))
        finally:
            self.in_flight.discard(task)
            if not self.in_flight and self.portico is not None and self.portico.shutting_down:
                self._drained.set()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self._start()
                except STARTUP_REFUSALS as exc:
                    print(f"portico: {exc}", file=sys.stderr, flush=True)
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for task in (self._supervised, self._lateness):
                    if task is not None:
                        task.cancel()
                if self.portico is not None:
                    await self.portico.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _start(self) -> None:
        asyncio.get_running_loop().set_exception_handler(_quiet_about_dropped_receives)
        settings = Settings.from_env()
        configure_logging(settings.log_format)
        try:
            tracing.configure_from_environment()
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        self.portico = self.build(settings)
        await self.portico.start()
        self.http = self.portico.http_app
        self._lateness = asyncio.create_task(self._watch_lateness())
        settle_heap()
        name = os.environ.get(SUPERVISOR_ENV)
        if name:
            reader, writer = await _connect(name)
            writer.write(READY + b" %d\n" % os.getpid())
            await writer.drain()
            self._supervised = asyncio.create_task(self._supervise(reader, writer))

    async def _watch_lateness(self) -> None:
        """Keep :attr:`behind` true while the loop wakes this up later than asked: then calls
        wait in its queue for their turn."""
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time()
            await asyncio.sleep(LATENESS_CHECK_SECONDS)
            self.behind = loop.time() - asked > LATENESS_CHECK_SECONDS + BEHIND_SECONDS

    async def _supervise(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Reload when the supervisor says so; wait for its ``drain`` (or its going away), then
        drain."""
        line = await reader.readline()
        while line.strip() == RELOAD:
            if self.portico is not None:
                request_reload(self.portico)
            line = await reader.readline()
        await self.drain()
        if line.strip() == DRAIN:
            with contextlib.suppress(OSError):
                writer.write(DRAINED + b"\n")
                await writer.drain()
        else:  # the supervisor is gone: nobody will stop Envoy but Envoy itself
            os.kill(os.getpid(), signal.SIGTERM)

    async def drain(self) -> None:
        """Stop taking calls, end the streams, and let the calls in flight finish within the
        grace; those still running then are cancelled, and answer UNAVAILABLE."""
        portico = self.portico
        assert portico is not None
        portico.begin_shutdown()
        if not self.in_flight:
            self._drained.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._drained.wait(), portico.settings.shutdown_grace_seconds)
        for task in list(self.in_flight):
            task.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._drained.wait(), 1.0)


class WebSocketBridge:
    """The WebSocket filter's app: each connection runs in ``target`` on its loop, every ASGI
    event crossing back to this loop, where the connection is."""

    def __init__(self, target: PyvoyApp) -> None:
        self.target = target

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        owner = self.target.loop
        if owner is None:
            return  # not started: pyvoy closes the connection
        here = asyncio.get_running_loop()

        async def receive_here() -> Any:
            return await asyncio.wrap_future(
                asyncio.run_coroutine_threadsafe(_run(receive()), here)
            )

        async def send_here(message: Any) -> None:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_run(send(message)), here))

        served = self.target(scope, receive_here, send_here)
        # Cancelled here (the connection gone), the call is cancelled there too.
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(served, owner))


class _BodyThenDisconnect:
    """``receive`` as uvicorn's behaves: once the body has ended, the next event is the
    disconnect, whenever it comes. pyvoy answers every receive after the body at once with
    another empty end of body, until the client has gone: a stream's reader, waiting for the
    disconnect, would spin (or stall on its full queue and never hear it). So it asks pyvoy
    again at growing intervals, at most once a second: a client that goes away ends its
    stream within about a second."""

    __slots__ = ("_ended", "_receive")

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._ended = False

    async def __call__(self) -> Any:
        if not self._ended:
            message = await self._receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                self._ended = True
            return message
        pause = DISCONNECT_POLL_FIRST_SECONDS
        while True:
            message = await self._receive()
            if message["type"] != "http.request":
                return message
            await asyncio.sleep(pause)
            pause = min(pause * 2, DISCONNECT_POLL_MAX_SECONDS)


def _replies_to(send: Send) -> Send:
    """``send``, handing a large body over in pieces (see :data:`PIECE_BYTES`), its events dropped
    once the client has gone, as uvicorn drops them: pyvoy raises OSError (as ASGI allows), which
    would reach a stream's flow as its servicer failing; the flow hears of the disconnect from
    ``receive``, as on uvicorn."""

    async def send_or_drop(message: Any) -> None:
        try:
            if len(message.get("body", b"")) > PIECE_BYTES:
                await _in_pieces(send, message)
            else:
                await send(message)
        except OSError:
            pass

    return send_or_drop


async def _in_pieces(send: Send, message: Any) -> None:
    body = message["body"]
    start = 0
    while len(body) - start > PIECE_BYTES:
        piece = body[start : start + PIECE_BYTES]
        # Awaited once the event is let go: pyvoy copied the piece, only its copy waits.
        taken = send({"type": "http.response.body", "body": piece, "more_body": True})
        del piece
        start += PIECE_BYTES
        await taken
    more = message.get("more_body", False)
    await send({"type": "http.response.body", "body": body[start:], "more_body": more})


def _quiet_about_dropped_receives(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's error handler, but for one known case: a stream's reader stops (its task is
    cancelled) while it waits for the next request event, and pyvoy later completes that
    receive's future anyway, which asyncio reports as an InvalidStateError in pyvoy's callback.
    Nobody waits for that event any more: there is nothing to report."""
    exception = context.get("exception")
    if isinstance(exception, asyncio.InvalidStateError) and "_pyvoy" in repr(context.get("handle")):
        return
    loop.default_exception_handler(context)


async def _run(step: Awaitable[Any]) -> Any:
    """An ASGI callable's awaitable as the coroutine another loop can be handed."""
    return await step


async def _connect(name: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect("\0" + name)
    return await asyncio.open_unix_connection(sock=sock)
