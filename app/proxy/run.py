"""Running ``portico proxy``: the HTTP server over the proxy's app, signals, the start-up line."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from app import __version__
from app.observe.logs import configure_logging
from app.proxy.server import Proxy, check_proxy_settings
from app.server.listeners import http_socket
from app.server.serving import (
    base_url,
    run_event_loop,
    serve_metrics_apart,
    settle_heap,
    stopped_by_signals,
    warn_unread_variables,
)
from app.settings.config import ConfigurationError, Settings

log = logging.getLogger("portico.proxy")


async def run(settings: Settings) -> None:
    """Serve REST/JSON in front of the upstreams until SIGINT/SIGTERM; SIGHUP re-reads their
    descriptors."""
    proxy = Proxy(settings)
    await proxy.start()
    settle_heap()
    http_server = stopped_by_signals(settings, proxy.app, proxy.begin_shutdown)
    asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, proxy.request_reload)
    try:
        listener = http_socket(settings.http_host, settings.http_port, shared=False)
        http_base = base_url(settings, listener)
        log.info(
            "portico %s proxy: REST/JSON on %s in front of %s (auth: %s; dashboard: %s/dashboard/)",
            __version__,
            http_base,
            ", ".join(settings.upstreams),
            settings.proxy_auth,
            http_base,
        )
        await http_server.serve(sockets=[listener])
    finally:
        await proxy.stop()


def proxy(settings: Settings) -> None:
    """Entry point of ``portico proxy``."""
    configure_logging(settings.log_format)
    warn_unread_variables()
    try:
        check_proxy_settings(settings)
        serve_metrics_apart(settings)
        with contextlib.suppress(KeyboardInterrupt):
            run_event_loop(run(settings))
    except ConfigurationError as exc:
        raise SystemExit(f"portico: {exc}") from None
