"""``portico proxy`` as a server backend runs it: :data:`PROXY` (uvicorn's workers build a
:class:`~app.proxy.server.Proxy`, pyvoy's an :class:`~app.proxy.pyvoy_app.EnvoyProxy` whose
calls go out through Envoy), SIGHUP re-reading the upstreams' descriptors, the start-up line."""

from __future__ import annotations

import logging

from app import __version__
from app.proxy.server import check_proxy_settings
from app.server.application import Application
from app.server.process import STARTUP_REFUSALS
from app.server.serving import serve
from app.settings.config import Settings

log = logging.getLogger("portico.proxy")


def announce(settings: Settings, http_base: str, grpc_port: int) -> None:
    """The start-up line: where the proxy listens and what it fronts (it has no gRPC port)."""
    log.info(
        "portico %s proxy: REST/JSON on %s in front of %s (auth: %s; dashboard: %s/dashboard/)",
        __version__,
        http_base,
        ", ".join(settings.upstreams),
        settings.proxy_auth,
        http_base,
    )


PROXY = Application(
    build="app.proxy.server:Proxy",
    build_on_pyvoy="app.proxy.pyvoy_app:EnvoyProxy",
    announce=announce,
    reload_on_hangup=True,
    own_grpc_port=False,
    # A cluster per upstream for the calls a worker makes within a request.
    envoy_clusters="app.proxy.envoy_calls:envoy_clusters",
)


def proxy(settings: Settings) -> None:
    """Entry point of ``portico proxy``."""
    try:
        check_proxy_settings(settings)
    except STARTUP_REFUSALS as exc:
        raise SystemExit(f"portico: {exc}") from None
    serve(settings, PROXY)
