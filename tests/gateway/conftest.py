"""Gateway fixtures: the test API behind one servicer, over the real app and real gRPC."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
import httpx

from app.gateway.admission import NO_AUTH
from app.gateway.registry import Registry
from app.gateway.routes import GatewayOptions, create_app
from app.grpc_server.server import create_server, start, stop

from .shelf import SERVICE, ShelfServicer, pb, pb_grpc

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion (no pytest-asyncio here)."""
    return asyncio.run(coro)


def shelf_registry() -> Registry:
    """A registry of the test proto only."""
    return Registry([pb.DESCRIPTOR])


@dataclass
class Served:
    """One servicer behind both transports."""

    servicer: ShelfServicer
    http: httpx.AsyncClient
    stub: Any
    channel: grpc.aio.Channel
    app: Any


@contextlib.asynccontextmanager
async def serving(
    options: GatewayOptions | None = None, servicer: ShelfServicer | None = None
) -> AsyncIterator[Served]:
    """The app (through httpx's ASGI transport) and a gRPC server on a free port, same servicer."""
    servicer = servicer or ShelfServicer()
    registry = shelf_registry()
    servicers = {SERVICE: servicer}
    options = options or GatewayOptions(authenticate=NO_AUTH)
    app = create_app(registry, servicers, options)
    server, port = create_server(
        "127.0.0.1:0", registry, servicers, authenticate=options.authenticate
    )
    await start(server)
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 40000))
    try:
        async with (
            httpx.AsyncClient(transport=transport, base_url="http://portico") as http,
            grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel,
        ):
            yield Served(servicer, http, pb_grpc.ShelfStub(channel), channel, app)
    finally:
        await stop(server, grace=0.5)
