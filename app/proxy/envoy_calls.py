"""Upstream calls through Envoy, for ``portico proxy --server pyvoy``.

Each worker's Envoy has a cluster per upstream (HTTP/2, with the same TLS as the grpc.aio
channels), and a request's calls go out through pyvoy's ``HTTPTransport`` to it
(:class:`~app.gateway.upstream_http2.Http2Invoker`): Envoy keeps the connections, multiplexes
the calls on them and does the TLS. Measured under pyvoy (one core, wrk -c64, a grpc-go
upstream), a call costs about what a grpc.aio channel's does there (both far less than
grpc.aio's under uvicorn), with a steadier p99 through the whole proxy; the commit that added
this module has the numbers.

pyvoy's transport works only within the HTTP request that makes the call. A WebSocket
connection runs in another filter, and reflection and readiness run outside any request: they
keep the grpc.aio channel (:class:`EnvoyOrChannel` picks per call).
"""

from __future__ import annotations

import contextvars
import ipaddress
import ssl
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from google.protobuf.message import Message
from pyqwest import Transport
from pyvoy import HTTPVersion, TLSConfig, Upstream
from starlette.types import ASGIApp, Receive, Scope, Send

from app.gateway.invoker import Call, Invoker, Request
from app.gateway.upstream_http2 import Connect
from app.settings.config import ConfigurationError, Settings

# Set within an HTTP request Envoy's HTTP filter runs: calls made there may use its transport.
IN_ENVOY_REQUEST: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "in_envoy_request", default=False
)
# A call without a deadline may last as long as its stream (the transport's default is 60 s).
NO_DEADLINE_SECONDS = 365 * 24 * 3600.0
# Envoy's timeout waits this much past a call's deadline: the deadline itself is the invoker's,
# which answers DEADLINE_EXCEEDED (Envoy's own would read as its 504, UNAVAILABLE).
DEADLINE_MARGIN_SECONDS = 1.0


def cluster_name(index: int) -> str:
    """The Envoy cluster of the ``index``-th upstream of ``PORTICO_UPSTREAMS``."""
    return f"upstream-{index}"


def envoy_clusters(settings: Settings) -> list[dict[str, Any]]:
    """A cluster per upstream: HTTP/2 (prior knowledge, or ALPN over TLS), verified as the
    grpc.aio channels are (the CA given, else the system's roots) with the client certificate."""
    tls = None
    if settings.upstream_tls or settings.upstream_ca:
        tls = TLSConfig(
            ca_cert=Path(settings.upstream_ca or _system_roots()),
            cert=Path(settings.upstream_cert) if settings.upstream_cert else None,
            key=Path(settings.upstream_key) if settings.upstream_key else None,
        )
    clusters = []
    for index, target in enumerate(settings.upstreams):
        upstream = Upstream(cluster_name(index), target, http_version=HTTPVersion.HTTP2, tls=tls)
        clusters.append(_cluster(upstream))
    return clusters


# What Envoy's client adds to a request, which the upstream would read as the caller's metadata:
# the request says what the caller said (app/gateway/upstream.py decides what travels).
ENVOY_ADDED = (
    "x-forwarded-for", "x-envoy-internal", "x-envoy-expected-rq-timeout-ms", "content-length",
)  # fmt: skip


def _cluster(upstream: Upstream) -> dict[str, Any]:
    from pyvoy import PyvoyServer

    # pyvoy writes the cluster's configuration (its TLS, SNI and SAN checks) itself.
    config = PyvoyServer("unused:app", upstreams=[upstream]).get_envoy_config()
    cluster: dict[str, Any] = config["static_resources"]["clusters"][0]
    options = cluster["typed_extension_protocol_options"]
    protocol = options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
    protocol["http_filters"] = [
        {
            "name": "envoy.filters.http.header_mutation",
            "typed_config": {
                "@type": "type.googleapis.com/"
                "envoy.extensions.filters.http.header_mutation.v3.HeaderMutation",
                "mutations": {"request_mutations": [{"remove": name} for name in ENVOY_ADDED]},
            },
        },
        {
            "name": "envoy.filters.http.upstream_codec",
            "typed_config": {
                "@type": "type.googleapis.com/"
                "envoy.extensions.filters.http.upstream_codec.v3.UpstreamCodec"
            },
        },
    ]
    if upstream.tls is not None:
        _check_names(cluster["transport_socket"]["typed_config"], upstream.address)
    return cluster


def _check_names(tls: dict[str, Any], target: str) -> None:
    """The certificate must name the target as grpc checks it: an address among its IP
    names (sent without SNI, which takes no address), a host name among its DNS names."""
    host = urlsplit(f"//{target}").hostname or ""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return  # pyvoy's own: SNI, and the DNS names checked against it
    tls.pop("sni", None)
    tls["auto_sni_san_validation"] = False
    validation = tls["common_tls_context"]["validation_context"]
    validation["match_typed_subject_alt_names"] = [
        {"san_type": "IP_ADDRESS", "matcher": {"exact": host}}
    ]


def _system_roots() -> str:
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile):
        if candidate and Path(candidate).is_file():
            return candidate
    raise ConfigurationError(
        "PORTICO_UPSTREAM_TLS: this machine has no CA bundle for Envoy to verify the upstreams "
        "with; allowed: PORTICO_UPSTREAM_CA with a PEM file"
    )


def envoy_connect(index: int) -> Connect:
    """Envoy's transport to the ``index``-th upstream, timed out at the call's deadline."""
    # Only within Envoy's process: pyvoy's module of the running filter.
    from pyvoy.asgi.httpclient import HTTPTransport

    name = cluster_name(index)
    lasting = HTTPTransport(name, timeout=NO_DEADLINE_SECONDS)

    def connect(timeout: float | None) -> Transport:
        if timeout is None:
            return lasting
        return HTTPTransport(name, timeout=timeout + DEADLINE_MARGIN_SECONDS)

    return connect


class EnvoyOrChannel:
    """Envoy's invoker within an HTTP request Envoy runs, the grpc.aio one elsewhere."""

    def __init__(self, envoy: Invoker, channel: Invoker) -> None:
        self._envoy = envoy
        self._channel = channel

    def _for(self) -> Invoker:
        return self._envoy if IN_ENVOY_REQUEST.get() else self._channel

    async def unary(self, call: Call, request: Request) -> Message:
        return await self._for().unary(call, request)

    def stream(self, call: Call, request: Request) -> AsyncGenerator[Message, None]:
        return self._for().stream(call, request)


def marking_envoy_requests(app: ASGIApp) -> ASGIApp:
    """``app``, its HTTP requests marked as Envoy's own (see :data:`IN_ENVOY_REQUEST`)."""

    async def marked(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            IN_ENVOY_REQUEST.set(True)
        await app(scope, receive, send)

    return marked
