"""Serving the metrics: the token check of ``/metrics``, and the separate metrics port.

On the main HTTP port the gateway serves ``/metrics`` itself (see ``app/gateway/routes.py``).
With ``PORTICO_METRICS_PORT`` set, the process that runs ``portico serve`` (the parent of the
workers when there are several) serves ``/metrics`` on that port instead, from a thread: a
scrape then never queues behind API calls, and the port can stay inside the cluster network.
"""

from __future__ import annotations

import hmac
import socketserver
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from app.observe.metrics import exposition

METRICS_PATH = "/metrics"


def token_accepted(authorization: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``token`` (always, when no token is set)."""
    if not token:
        return True
    scheme, _, given = (authorization or "").partition(" ")
    # Compared in constant time: the answer must not tell how much of a guess was right.
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds are not worth a log line each."""


def metrics_wsgi_app(token: str) -> Callable[..., Iterable[bytes]]:
    """A WSGI app answering ``GET /metrics`` (with the bearer ``token`` when one is set)."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != METRICS_PATH:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found; metrics are at /metrics\n"]
        if not token_accepted(environ.get("HTTP_AUTHORIZATION"), token):
            start_response(
                "401 Unauthorized",
                [("Content-Type", "text/plain"), ("WWW-Authenticate", "Bearer")],
            )
            return [b"a bearer token is required\n"]
        payload, content_type = exposition(environ.get("HTTP_ACCEPT"))
        start_response("200 OK", [("Content-Type", content_type)])
        return [payload]

    return app


def serve_metrics(host: str, port: int, token: str) -> tuple[WSGIServer, int]:
    """Serve ``/metrics`` on ``host:port`` from a daemon thread; returns the server and port."""
    server = make_server(
        host,
        port,
        metrics_wsgi_app(token),
        server_class=_ThreadingWSGIServer,
        handler_class=_QuietHandler,
    )
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server, server.server_port
