"""Serving under uvicorn: REST/JSON (and the application's grpc.aio port) in one event loop
per worker, the workers sharing the ports, signals turned into a graceful stop."""

from __future__ import annotations

import asyncio
import contextlib
import math
import multiprocessing
import os
import signal
from collections.abc import Callable
from typing import Any

import uvicorn

from app.observe import tracing
from app.observe.logs import configure_logging
from app.server.application import Application, request_reload
from app.server.listeners import http_socket
from app.server.on_uvicorn.connections import http_protocol
from app.server.process import (
    STARTUP_REFUSALS,
    base_url,
    multiprocess_metrics,
    pick_free_ports,
    run_event_loop,
    serve_metrics_apart,
    settle_heap,
)
from app.server.tls import uvicorn_tls
from app.settings.config import ConfigurationError, Settings


def serve(settings: Settings, application: Application) -> None:
    """Serve ``application`` in this process, or in ``settings.workers`` of them."""
    serve_metrics_apart(settings)
    if settings.workers > 1:
        run_workers(settings, application)
    else:
        with contextlib.suppress(KeyboardInterrupt):
            run_event_loop(run(settings, application))


async def run(settings: Settings, application: Application) -> None:
    """Serve ``application`` until SIGINT/SIGTERM, then stop it gracefully."""
    try:
        tracing.configure_from_environment()
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    served = application.builder()(settings)
    await served.start()
    settle_heap()
    if served.http_app is None:
        raise RuntimeError("start() did not build the HTTP app")
    http_server = stopped_by_signals(settings, served.http_app, served.begin_shutdown)
    if application.reload_on_hangup:
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, request_reload, served)
    try:
        listener = http_socket(settings.http_host, settings.http_port, shared=settings.workers > 1)
        application.announce(settings, base_url(settings, listener), served.grpc_port)
        await http_server.serve(sockets=[listener])
    finally:
        await served.stop()


def stopped_by_signals(
    settings: Settings, app: Any, begin_shutdown: Callable[[], None]
) -> uvicorn.Server:
    """uvicorn over ``app``, which SIGINT and SIGTERM stop gracefully.

    ``begin_shutdown`` runs first: streams end (uvicorn would wait for them without end) and
    the server's other transports stop taking calls; uvicorn then gives calls in flight the
    grace period."""
    http_server = uvicorn.Server(http_config(settings, app))

    def shut_down() -> None:
        begin_shutdown()
        http_server.should_exit = True

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, shut_down)
    return http_server


def http_config(settings: Settings, app: Any) -> uvicorn.Config:
    """How uvicorn serves the REST/JSON side: the limits on slow and oversized clients."""
    return uvicorn.Config(
        app,
        log_level="info",
        log_config=None,  # the format configure_logging chose, secrets masked
        access_log=settings.access_log,
        # Portico is the origin server; forwarded headers are not trusted unless asked for.
        proxy_headers=False,
        server_header=False,
        http=http_protocol(settings.header_timeout_seconds),
        # Every WebSocket frame is a request message: the body limit holds for each.
        ws_max_size=settings.max_body_bytes,
        timeout_graceful_shutdown=math.ceil(settings.shutdown_grace_seconds),
        **uvicorn_tls(settings),
    )


def _worker(settings: Settings, application: Application) -> None:
    configure_logging(settings.log_format)
    with contextlib.suppress(KeyboardInterrupt):
        try:
            run_event_loop(run(settings, application))
        except STARTUP_REFUSALS as exc:
            raise SystemExit(f"portico: {exc}") from None  # the exit code the supervisor reads


def run_workers(settings: Settings, application: Application) -> None:
    """Run ``settings.workers`` processes of ``application`` (each builds its own) on the same
    ports; stop them all on a signal, and pass SIGHUP on to each when the application reloads
    on it (the proxy)."""
    context = multiprocessing.get_context("spawn")  # grpc must not be forked once started
    settings, reserved = pick_free_ports(settings)
    metrics_dir = multiprocess_metrics(settings)
    workers = [
        context.Process(target=_worker, args=(settings, application))
        for _ in range(settings.workers)
    ]
    for process in workers:
        process.start()

    def stop_all(signum: int, frame: object) -> None:
        for process in workers:
            if process.is_alive():
                process.terminate()

    def pass_on(signum: int, frame: object) -> None:
        for process in workers:
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signum)

    signal.signal(signal.SIGTERM, stop_all)
    signal.signal(signal.SIGINT, stop_all)
    if application.reload_on_hangup:
        signal.signal(signal.SIGHUP, pass_on)
    for process in workers:
        process.join()
        if metrics_dir is not None and process.pid is not None:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(process.pid, metrics_dir)
    for sock in reserved:
        sock.close()
    # A worker that failed, or was killed by anything but the stop signals, fails the whole.
    stopped = (0, -signal.SIGTERM, -signal.SIGINT)
    failed = sum(1 for process in workers if process.exitcode not in stopped)
    if failed:
        raise SystemExit(f"portico: {failed} of {len(workers)} workers failed")
