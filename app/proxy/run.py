"""Running ``portico proxy``: the HTTP server over the proxy's app (uvicorn, in one process or
several, or Envoy's under pyvoy), signals, the start-up line."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal

from app import __version__
from app.observe.logs import configure_logging
from app.proxy.server import Proxy, check_proxy_settings
from app.server.listeners import claimed_ports, http_socket
from app.server.serving import (
    STARTUP_REFUSALS,
    base_url,
    run_event_loop,
    run_workers,
    serve_metrics_apart,
    serve_on_pyvoy,
    settle_heap,
    stopped_by_signals,
    warn_unread_variables,
)
from app.server.tls import check_tls_files
from app.settings.config import Settings

log = logging.getLogger("portico.proxy")

PYVOY_APP_MODULE = "app.proxy.pyvoy_app"


async def run(settings: Settings) -> None:
    """Serve REST/JSON in front of the upstreams until SIGINT/SIGTERM; SIGHUP re-reads their
    descriptors."""
    proxy = Proxy(settings)
    await proxy.start()
    settle_heap()
    http_server = stopped_by_signals(settings, proxy.app, proxy.begin_shutdown)
    asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, proxy.request_reload)
    try:
        listener = http_socket(settings.http_host, settings.http_port, shared=settings.workers > 1)
        announce(settings, base_url(settings, listener))
        await http_server.serve(sockets=[listener])
    finally:
        await proxy.stop()


def announce(settings: Settings, http_base: str) -> None:
    """The start-up line: where the proxy listens and what it fronts."""
    log.info(
        "portico %s proxy: REST/JSON on %s in front of %s (auth: %s; dashboard: %s/dashboard/)",
        __version__,
        http_base,
        ", ".join(settings.upstreams),
        settings.proxy_auth,
        http_base,
    )


def supervise_pyvoy(settings: Settings) -> None:
    """The proxy's Envoy workers (:mod:`app.proxy.pyvoy_app`), each with a cluster per upstream
    for the calls it makes within a request; SIGHUP reaches every worker."""
    from app.proxy.envoy_calls import envoy_clusters
    from app.server.pyvoy_server import EnvoyConfig, serve_pyvoy

    config = EnvoyConfig(settings, PYVOY_APP_MODULE, upstreams=envoy_clusters(settings))
    serve_pyvoy(settings, config, lambda base: announce(settings, base), reload_on_hangup=True)


def proxy(settings: Settings) -> None:
    """Entry point of ``portico proxy``."""
    configure_logging(settings.log_format)
    warn_unread_variables()
    try:
        check_proxy_settings(settings)
        check_tls_files(settings)
        # The proxy listens on its HTTP port only, whatever the gRPC settings say.
        with claimed_ports(dataclasses.replace(settings, grpc_server="off")):
            if settings.server == "pyvoy":
                serve_on_pyvoy(settings, supervise_pyvoy)
                return
            serve_metrics_apart(settings)
            if settings.workers > 1:
                run_workers(settings, run, passed_on=(signal.SIGHUP,))
                return
            with contextlib.suppress(KeyboardInterrupt):
                run_event_loop(run(settings))
    except STARTUP_REFUSALS as exc:
        raise SystemExit(f"portico: {exc}") from None
