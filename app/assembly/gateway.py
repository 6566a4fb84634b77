"""The gateway's options and readiness as the settings and the store say, for ``serve`` and
``proxy`` alike."""

from __future__ import annotations

import logging
import os
from typing import Any

from app.gateway.errors import GatewayError
from app.gateway.options import GatewayOptions
from app.observe.repeats import Repeats
from app.settings.config import Settings
from app.store import ObjectStore, StoreError
from app.store.error_status import store_error_status

log = logging.getLogger("portico")
_not_ready = Repeats(log)


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
        # Under pyvoy the HTTP port serves native gRPC (serve's and proxy's alike).
        grpc_port=settings.http_port if settings.server == "pyvoy" else None,
        grpc_client_certificate_required=bool(settings.tls_client_ca),
        known_errors=store_errors,
        **server_specific,
    )


def store_errors(exc: Exception, request_id: str) -> GatewayError | None:
    """The status of a store error that reached a transport from a servicer or a hook (the
    gate's checks, the rate limiter's buckets, idempotency records): a database outage is
    UNAVAILABLE with its retry delay on every protocol, never INTERNAL."""
    if isinstance(exc, StoreError):
        return GatewayError.from_status(store_error_status(exc, request_id))
    return None


async def store_trouble(store: ObjectStore) -> str:
    """Why the store does not answer a query ("" when it does). Its being unavailable is a line
    in the log (one per interval: probes come every few seconds); anything else a traceback."""
    try:
        await store.current_revision()
    except StoreError as exc:
        _not_ready.warning("store", "not ready: the store does not answer: %s", exc.message)
        return exc.message
    except Exception as exc:  # a probe: whatever the store raises means "not ready"
        log.warning("not ready: the store does not answer", exc_info=True)
        return str(exc) or type(exc).__name__
    return ""
