"""Assembly: the only module that knows every part. Builds the apps from settings and runs them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

import grpc
import uvicorn
from fastapi import FastAPI
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from app import __version__
from app.config import Settings
from app.gateway.registry import Registry

log = logging.getLogger("portico")

SHUTDOWN_GRACE_SECONDS = 5.0


def create_app(settings: Settings) -> FastAPI:
    """The REST/JSON side: one FastAPI app, built per call so tests pass their own settings."""
    app = FastAPI(title="Portico", version=__version__)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> dict[str, str]:
        return {"status": "ready"}

    return app


def create_grpc_server(settings: Settings, registry: Registry) -> tuple[grpc.aio.Server, int]:
    """The gRPC side, bound but not started; port 0 picks a free port (returned)."""
    server = grpc.aio.server()
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = [s.full_name for s in registry.services]
    reflection.enable_server_reflection(
        [*names, health.SERVICE_NAME, reflection.SERVICE_NAME], server
    )
    port = server.add_insecure_port(f"{settings.grpc_host}:{settings.grpc_port}")
    server.health = health_servicer  # type: ignore[attr-defined]
    return server, port


async def run(settings: Settings) -> None:
    """Serve REST/JSON and gRPC until SIGINT/SIGTERM, then stop both gracefully."""
    registry = Registry.from_package("gen")
    grpc_server, grpc_port = create_grpc_server(settings, registry)
    await grpc_server.start()
    await grpc_server.health.set("", health_pb2.HealthCheckResponse.SERVING)  # type: ignore[attr-defined]
    config = uvicorn.Config(
        create_app(settings),
        host=settings.http_host,
        port=settings.http_port,
        log_level="info",
        lifespan="on",
    )
    http_server = uvicorn.Server(config)
    # uvicorn installs its own signal handlers; ours stops the gRPC side alongside it.
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, lambda: setattr(http_server, "should_exit", True))
    log.info(
        "gRPC on %s:%d, REST/JSON on http://%s:%d",
        settings.grpc_host,
        grpc_port,
        settings.http_host,
        settings.http_port,
    )
    try:
        await http_server.serve()
    finally:
        await grpc_server.stop(SHUTDOWN_GRACE_SECONDS)


def serve(settings: Settings) -> None:
    """Entry point of ``portico serve``."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    asyncio.run(run(settings))
