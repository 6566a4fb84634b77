"""The container image's health probe: ``GET /healthz`` of the server on this machine, over TLS
when it serves TLS. Run as ``python -m app.cli.healthcheck``; exits 0 when healthy, else 1.

It reads the server's own settings (``PORTICO_HTTP_HOST``, ``PORTICO_HTTP_PORT``,
``PORTICO_TLS_CERT``), so the probe follows them instead of assuming plain HTTP on 8080.
"""

from __future__ import annotations

import os
import ssl
import sys
import urllib.request
from collections.abc import Mapping

# A server listening on every address answers on loopback.
_ANY = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}


def probe_url(env: Mapping[str, str]) -> str:
    """The URL of the server's liveness endpoint, from its settings."""
    scheme = "https" if env.get("PORTICO_TLS_CERT") else "http"
    host = env.get("PORTICO_HTTP_HOST", "127.0.0.1")
    host = _ANY.get(host, host)
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{env.get('PORTICO_HTTP_PORT', '8080')}/healthz"


def loopback_tls(url: str) -> ssl.SSLContext | None:
    """For an ``https`` probe of this machine's server: whether the process answers, not who it
    is (its certificate names the public host, never the loopback address asked here)."""
    if not url.startswith("https:"):
        return None
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def main() -> int:
    url = probe_url(os.environ)
    try:
        with urllib.request.urlopen(url, timeout=2, context=loopback_tls(url)) as reply:
            healthy = reply.status == 200
    except OSError as exc:
        print(f"unhealthy: {url}: {exc}", file=sys.stderr)
        return 1
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
