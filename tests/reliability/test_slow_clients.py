"""Item: slow clients cannot hold connections. Partial headers, or a body that never completes,
once held a connection 25 s and more; now the head and the body each have a deadline
(``PORTICO_HEADER_TIMEOUT_SECONDS``, ``PORTICO_BODY_TIMEOUT_SECONDS``) and the answer is 408.
An idle kept-alive connection is closed after uvicorn's keep-alive timeout, quietly."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import uvicorn

from app.server.on_uvicorn.serve import http_config
from tests.harness import run, running, settings_for
from tests.reliability.server import login, start_server

TIMEOUT = 0.5


@contextlib.asynccontextmanager
async def _served(app: object, tmp_path: Path, keep_alive: float = 5.0) -> AsyncIterator[int]:
    """The app on uvicorn configured as ``portico serve`` configures it (keep-alive timeout
    ``keep_alive`` seconds, uvicorn's default); yields the port."""
    settings = settings_for(
        tmp_path, http_port=0, header_timeout_seconds=TIMEOUT, body_timeout_seconds=TIMEOUT
    )
    config = http_config(settings, app)
    config.timeout_keep_alive = keep_alive
    config.host, config.port, config.log_level, config.lifespan = "127.0.0.1", 0, "warning", "off"
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.005)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        await task


async def _until_closed(reader: asyncio.StreamReader) -> tuple[bytes, float]:
    """What the server sends until it closes the connection, and how long that took."""
    started = time.perf_counter()
    answer = await asyncio.wait_for(reader.read(), 10)
    return answer, time.perf_counter() - started


def test_partial_headers_are_cut_off(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server, _served(server.portico.http_app, tmp_path) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /api/v1/version HTTP/1.1\r\nHost: portico\r\nX-Slow: ")
            await writer.drain()
            answer, took = await _until_closed(reader)
            writer.close()
            assert answer.startswith(b"HTTP/1.1 408"), answer
            assert took < TIMEOUT + 2

            # A connection that never sends anything is closed too.
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            _, took = await _until_closed(reader)
            writer.close()
            assert took < TIMEOUT + 2

    run(scenario())


async def _answered(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> bytes:
    """Send ``request`` on a kept-alive connection; the head of its answer (body read too)."""
    writer.write(request)
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    await reader.readexactly(length)
    return head


HEALTH = b"GET /healthz HTTP/1.1\r\nHost: portico\r\n\r\n"


def test_an_idle_kept_alive_connection_is_closed_quietly(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with (
            running(tmp_path) as server,
            _served(server.portico.http_app, tmp_path, keep_alive=TIMEOUT) as port,
        ):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(3):  # kept alive between requests that follow at once
                assert (await _answered(reader, writer, HEALTH)).startswith(b"HTTP/1.1 200")
            answer, took = await _until_closed(reader)
            writer.close()
            assert answer == b"", answer  # no 408 for a client that asked for nothing
            assert took < TIMEOUT + 2

    run(scenario())


def test_a_later_requests_slow_head_is_cut_off_on_a_kept_alive_connection(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with (
            running(tmp_path) as server,
            _served(server.portico.http_app, tmp_path, keep_alive=60) as port,
        ):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            assert (await _answered(reader, writer, HEALTH)).startswith(b"HTTP/1.1 200")
            # The connection waits for its next request up to a minute, but once a request
            # has begun its head must arrive within the header timeout.
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: portico\r\nX-Slow: ")
            answer, took = await _until_closed(reader)
            writer.close()
            assert answer.startswith(b"HTTP/1.1 408"), answer
            assert took < TIMEOUT + 2

    run(scenario())


def test_a_body_that_never_completes_is_cut_off(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with (
            running(tmp_path, body_timeout_seconds=TIMEOUT) as server,
            _served(server.portico.http_app, tmp_path) as port,
        ):
            head, took = await _unfinished_body(port, await server.login())
            assert head.startswith(b"HTTP/1.1 408"), head
            assert took < TIMEOUT + 2

    run(scenario())


async def _unfinished_body(port: int, token: str) -> tuple[bytes, float]:
    """Send a request whose body never completes: the head of the answer, and how long it took."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        b"POST /api/v1/cluster HTTP/1.1\r\nHost: portico\r\n"
        b"Authorization: Bearer " + token.encode() + b"\r\n"
        b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name": '
    )
    await writer.drain()
    started = time.perf_counter()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    took = time.perf_counter() - started
    writer.close()
    return head, took


def test_pyvoy_cuts_off_slow_and_oversized_heads_and_slow_bodies(tmp_path: Path) -> None:
    # The same limits, by Envoy's own means (the head) and the gateway's (the body).
    timeouts = {
        "PORTICO_HEADER_TIMEOUT_SECONDS": str(TIMEOUT),
        "PORTICO_BODY_TIMEOUT_SECONDS": str(TIMEOUT),
    }
    served = start_server(tmp_path / "data", env=timeouts, server="pyvoy")

    async def scenario() -> None:
        port = served.http_port
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /api/v1/version HTTP/1.1\r\nHost: portico\r\nX-Slow: ")
        await writer.drain()
        answer, took = await _until_closed(reader)
        writer.close()
        assert answer == b"", answer  # Envoy closes a connection whose head never completes
        assert took < TIMEOUT + 2

        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        huge = b"X-Huge: " + b"a" * 100_000 + b"\r\n"
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: portico\r\n" + huge + b"\r\n")
        answer, _ = await _until_closed(reader)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 431"), answer

        head, took = await _unfinished_body(port, login(served))
        assert head.startswith(b"HTTP/1.1 408"), head
        assert took < TIMEOUT + 2

    try:
        served.wait_ready()
        run(scenario())
    finally:
        assert served.stop() == 0
