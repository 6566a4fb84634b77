"""A whole Portico for end-to-end tests: real store, real gate, REST via httpx, gRPC on a port."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
import httpx
import uvicorn

from app.main import Portico
from app.server.on_uvicorn.connections import http_protocol
from app.settings.config import Settings

T = TypeVar("T")
ADMIN_PASSWORD = "admin-password"


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion (the suite has no asyncio plugin)."""
    return asyncio.run(coro)


async def eventually(
    check: Callable[[], Awaitable[T]], timeout: float = 5.0, *, what: str = ""
) -> T:
    """Poll ``check`` (every few ms) until it returns something truthy, and return that; fail
    after ``timeout`` naming ``what`` was awaited (the check's own name when not given)."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            awaited = what or getattr(check, "__qualname__", repr(check))
            raise AssertionError(f"{awaited}: not within {timeout} s (last: {value!r})")
        await asyncio.sleep(0.005)


def settings_for(data_dir: Path, **changes: Any) -> Settings:
    """Settings for a test server: its own data folder, a free gRPC port, cheap password hashes."""
    base = Settings(
        data_dir=data_dir,
        grpc_port=0,
        admin_password=ADMIN_PASSWORD,
        password_hash_cost=2**4,
        sim_step_seconds=0.001,
    )
    return dataclasses.replace(base, **changes)


@dataclass
class Running:
    """A started Portico with a REST client and a gRPC channel."""

    portico: Portico
    http: httpx.AsyncClient
    channel: grpc.aio.Channel

    async def login(self, username: str = "admin", password: str = ADMIN_PASSWORD) -> str:
        """A token for the account (over REST)."""
        reply = await self.http.post(
            "/v1/auth:login", json={"username": username, "password": password}
        )
        assert reply.status_code == 200, reply.text
        return reply.json()["token"]

    async def add_account(
        self, username: str, role: str, password: str = "password1", **binding: str
    ) -> str:
        """Create an account straight in the store (``binding``: its developer or operator
        organisation) and return a token for it."""
        portico = self.portico
        assert portico.store is not None and portico.gate is not None
        password_hash = portico.gate.hasher.hash(password)
        await portico.store.accounts.create(username, password_hash, role, **binding)
        return await self.login(username, password)


@contextlib.asynccontextmanager
async def running(data_dir: Path, **changes: Any) -> AsyncIterator[Running]:
    """Start Portico on ``data_dir``; stop it (and close the store) on exit."""
    portico = Portico(settings_for(data_dir, **changes))
    await portico.start()
    transport = httpx.ASGITransport(app=portico.http_app, client=("203.0.113.9", 50000))
    try:
        async with (
            httpx.AsyncClient(transport=transport, base_url="http://portico") as http,
            grpc.aio.insecure_channel(f"127.0.0.1:{portico.grpc_port}") as channel,
        ):
            yield Running(portico, http, channel)
    finally:
        await portico.stop()


@contextlib.asynccontextmanager
async def uvicorn_serving(app: Any) -> AsyncIterator[str]:
    """The app on a real uvicorn (true streaming, client disconnects, WebSockets) with the HTTP
    protocol ``portico serve`` uses; yields ``host:port``."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="off",
        http=http_protocol(Settings().header_timeout_seconds),
    )
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.005)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
