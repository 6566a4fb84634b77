"""What protects the one port under pyvoy, by Envoy's own means: its practices for an edge proxy
facing untrusted clients, added to the configuration pyvoy writes.

- **Addresses.** The client's address is the socket's (``use_remote_address``), and forwarding
  headers reach the app as the client sent them (``skip_xff_append``), where
  ``PORTICO_TRUSTED_PROXIES`` decides whether they are believed (:mod:`app.auth.client_address`),
  as under uvicorn.
- **HTTP/1.0**, which load balancers' health checks speak (often with no ``Host``), is answered.
"""

from __future__ import annotations

from typing import Any

from app.server.serving import url_host
from app.settings.config import Settings


def harden_connection_manager(manager: dict[str, Any], settings: Settings) -> None:
    """The HTTP connection manager's addresses and HTTP/1.0."""
    manager.update(
        use_remote_address=True,
        skip_xff_append=True,
        http_protocol_options={
            "accept_http_10": True,
            "default_host_for_http_10": url_host(settings.http_host),
        },
    )
