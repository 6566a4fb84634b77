"""Running the server: uvicorn and gRPC in one event loop per worker, the workers sharing the
ports, signals turned into a graceful stop, and the settings' checks that need the machine
(TLS files, free ports)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import math
import multiprocessing
import os
import shutil
import signal
import socket
from collections.abc import Callable, Coroutine
from typing import Any

import uvicorn

from app import __version__
from app.main import Portico
from app.observe import tracing
from app.observe.exposition import serve_metrics
from app.observe.logs import configure_logging
from app.observe.metrics import MULTIPROCESS_ENV
from app.server.listeners import PortBusy, claimed_ports, http_socket, reserved_free_port
from app.server.on_uvicorn.connections import http_protocol
from app.server.tls import check_tls_files, uvicorn_tls
from app.settings.config import ConfigurationError, Settings, unread_variables
from app.store import SchemaTooNew, make_private_folder

log = logging.getLogger("portico")

YOUNG_COLLECTION_THRESHOLD = 10_000


def settle_heap() -> None:
    """Tune the garbage collector for serving, once the server is built."""
    # Everything built so far lives as long as the server: keep it out of the collector's way,
    # so full collections stay short instead of pausing every request behind them.
    gc.collect()
    gc.freeze()
    # A request allocates hundreds of container objects that die at once: at the default young
    # threshold (700) the collector ran every few requests and found almost nothing, and the
    # objects it moved along made older collections frequent too (a tenth of a create storm's
    # CPU, with full collections of 20-40 ms). A young collection now waits until 10,000 more
    # objects live than died, which work in progress rarely keeps for long.
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])


async def run(settings: Settings) -> None:
    """Serve REST/JSON and gRPC until SIGINT/SIGTERM, then stop both gracefully."""
    try:
        tracing.configure_from_environment()
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    portico = Portico(settings)
    await portico.start()
    settle_heap()
    if portico.http_app is None:
        raise RuntimeError("start() did not build the HTTP app")
    http_server = stopped_by_signals(settings, portico.http_app, portico.begin_shutdown)
    try:
        listener = http_socket(settings.http_host, settings.http_port, shared=settings.workers > 1)
        http_base = base_url(settings, listener)
        log.info(
            "portico %s: gRPC on %s:%d, REST/JSON on %s (dashboard: %s/dashboard/)",
            __version__,
            url_host(settings.grpc_host),
            portico.grpc_port,
            http_base,
            http_base,
        )
        await http_server.serve(sockets=[listener])
    finally:
        await portico.stop()


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


def base_url(settings: Settings, listener: socket.socket) -> str:
    """The URL of the REST side on ``listener``: the port bound, not the one asked for (port 0
    means "any free one")."""
    scheme = "https" if settings.tls else "http"
    return f"{scheme}://{url_host(settings.http_host)}:{listener.getsockname()[1]}"


def url_host(host: str) -> str:
    """``host`` as it is written in a URL (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


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


# What stops a start with one line instead of a traceback (each message says what to change).
STARTUP_REFUSALS = (ConfigurationError, SchemaTooNew)


def _worker(settings: Settings, main: Callable[[Settings], Coroutine[Any, Any, None]]) -> None:
    configure_logging(settings.log_format)
    with contextlib.suppress(KeyboardInterrupt):
        try:
            run_event_loop(main(settings))
        except STARTUP_REFUSALS as exc:
            raise SystemExit(f"portico: {exc}") from None  # the exit code the supervisor reads


def run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop (uvicorn's fast loop, installed with it) or else asyncio's own."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn[standard] brings it
        asyncio.run(main)
    else:
        uvloop.run(main)


def run_workers(
    settings: Settings,
    main: Callable[[Settings], Coroutine[Any, Any, None]] = run,
    *,
    passed_on: tuple[signal.Signals, ...] = (),
) -> None:
    """Run ``settings.workers`` server processes of ``main`` (a module's function: each worker
    imports it) on the same ports; stop them all on a signal, and pass ``passed_on`` signals
    on to each (the proxy's SIGHUP)."""
    context = multiprocessing.get_context("spawn")  # grpc must not be forked once started
    settings, reserved = _pick_free_ports(settings)
    metrics_dir = _multiprocess_metrics(settings)
    workers = [
        context.Process(target=_worker, args=(settings, main)) for _ in range(settings.workers)
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
    for sig in passed_on:
        signal.signal(sig, pass_on)
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


def _pick_free_ports(settings: Settings) -> tuple[Settings, list[socket.socket]]:
    """Every worker must bind the same ports: a port 0 ("any free one") is picked here once,
    and held until the workers, which bind it too, are gone."""
    reserved: list[socket.socket] = []
    ports = {}
    for name, host in (("http_port", settings.http_host), ("grpc_port", settings.grpc_host)):
        if getattr(settings, name) == 0:
            reserved.append(reserved_free_port(host))
            ports[name] = reserved[-1].getsockname()[1]
    return dataclasses.replace(settings, **ports), reserved


def _multiprocess_metrics(settings: Settings) -> str | None:
    """With metrics on, a fresh folder where every worker keeps its numbers, named in the
    environment the workers inherit, so that a scrape of any one of them adds up all."""
    if not settings.metrics:
        return None
    given = os.environ.get(MULTIPROCESS_ENV)
    if given:
        return given  # the operator's own folder (they clear it between runs)
    folder = settings.data_dir / "metrics"
    shutil.rmtree(folder, ignore_errors=True)  # numbers of an earlier run would add up too
    make_private_folder(folder)
    os.environ[MULTIPROCESS_ENV] = str(folder)
    return str(folder)


def warn_unread_variables() -> None:
    """Say which ``PORTICO_*`` variables nothing reads (see :func:`config.unread_variables`)."""
    for warning in unread_variables(os.environ):
        log.warning("%s", warning)


def serve(settings: Settings) -> None:
    """Entry point of ``portico serve``."""
    configure_logging(settings.log_format)
    warn_unread_variables()
    try:
        check_tls_files(settings)
        with claimed_ports(settings):
            if settings.server == "pyvoy":
                serve_on_pyvoy(settings)
                return
            serve_metrics_apart(settings)
            if settings.workers > 1:
                run_workers(settings)
            else:
                run_event_loop(run(settings))
    except STARTUP_REFUSALS as exc:
        raise SystemExit(f"portico: {exc}") from None


def serve_on_pyvoy(settings: Settings, supervise: Callable[[Settings], None] | None = None) -> None:
    """The workers are Envoy processes (:mod:`app.server.pyvoy_server`): a port 0 is picked
    here once for all, and their metrics add up in a shared folder wherever they are read.
    ``supervise`` runs them (Portico's, by default) with the port picked."""
    from app.server.pyvoy_server import serve_pyvoy

    settings, reserved = _pick_free_ports(settings)
    if settings.workers > 1 or settings.metrics_port:
        _multiprocess_metrics(settings)
    serve_metrics_apart(settings)
    try:
        (supervise or serve_pyvoy)(settings)
    finally:
        for sock in reserved:
            sock.close()


def serve_metrics_apart(settings: Settings) -> None:
    """With ``PORTICO_METRICS_PORT``, serve /metrics there (a thread of this process, which
    outlives the workers and adds up theirs); the HTTP app then serves none."""
    if not settings.metrics_port:
        return
    try:
        _, port = serve_metrics(settings.http_host, settings.metrics_port, settings.metrics_token)
    except OSError:
        raise PortBusy("metrics", settings.http_host, settings.metrics_port) from None
    log.info("metrics on http://%s:%d/metrics", settings.http_host, port)
