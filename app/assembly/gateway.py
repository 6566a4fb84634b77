"""The gateway's options and readiness as the settings and the store say, for ``serve`` and
``proxy`` alike."""

from __future__ import annotations

import logging
import os
from typing import Any

from app.gateway.options import GatewayOptions
from app.settings.config import Settings
from app.store import ObjectStore

log = logging.getLogger("portico")


def gateway_options(settings: Settings, **server_specific: Any) -> GatewayOptions:
    """The HTTP side's policy as the settings say it, for ``serve`` and ``proxy`` alike; each
    adds what is its own (JSON options, streams, the authenticate hook, the document...)."""
    return GatewayOptions(
        max_body_bytes=settings.max_body_bytes,
        body_timeout_seconds=settings.body_timeout_seconds,
        cors_origins=settings.cors_origins,
        rpc_prefix=settings.rpc_prefix,
        # With a metrics port, /metrics is served there (app.server.serving) instead.
        metrics_endpoint=settings.metrics and not settings.metrics_port,
        metrics_token=settings.metrics_token,
        # Workers (pyvoy's always) are children of the process the user started.
        server_pid=os.getppid()
        if settings.workers > 1 or settings.server == "pyvoy"
        else os.getpid(),
        client_certificate_header=settings.server == "pyvoy",
        grpc_client_certificate_required=bool(settings.tls_client_ca),
        **server_specific,
    )


async def store_answers(store: ObjectStore) -> bool:
    """Readiness of the store: it answers a query."""
    try:
        await store.current_revision()
    except Exception:  # a probe: whatever the store raises means "not ready"
        log.warning("not ready: the store does not answer", exc_info=True)
        return False
    return True
