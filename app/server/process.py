"""What every server backend does in the process it starts: the heap tuned for serving, the
event loop, the start refusals said in one line, the ports picked once for all workers, the
metrics folder they share, the start-up URL."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import os
import shutil
import socket
from collections.abc import Coroutine
from typing import Any

from app.observe.exposition import serve_metrics
from app.observe.metrics import MULTIPROCESS_ENV
from app.server.listeners import PortBusy, reserved_free_port
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


# What stops a start with one line instead of a traceback (each message says what to change).
STARTUP_REFUSALS = (ConfigurationError, SchemaTooNew)


def run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop (uvicorn's fast loop, installed with it) or else asyncio's own."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn[standard] brings it
        asyncio.run(main)
    else:
        uvloop.run(main)


def base_url(settings: Settings, listener: socket.socket) -> str:
    """The URL of the REST side on ``listener``: the port bound, not the one asked for (port 0
    means "any free one")."""
    scheme = "https" if settings.tls else "http"
    return f"{scheme}://{url_host(settings.http_host)}:{listener.getsockname()[1]}"


def url_host(host: str) -> str:
    """``host`` as it is written in a URL (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


def pick_free_ports(settings: Settings) -> tuple[Settings, list[socket.socket]]:
    """Every worker must bind the same ports: a port 0 ("any free one") is picked here once,
    and held until the workers, which bind it too, are gone."""
    reserved: list[socket.socket] = []
    ports = {}
    for name, host in (("http_port", settings.http_host), ("grpc_port", settings.grpc_host)):
        if getattr(settings, name) == 0:
            reserved.append(reserved_free_port(host))
            ports[name] = reserved[-1].getsockname()[1]
    return dataclasses.replace(settings, **ports), reserved


def multiprocess_metrics(settings: Settings) -> str | None:
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
