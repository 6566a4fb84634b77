"""What protects the one port under pyvoy, by Envoy's own means: its practices for an edge proxy
facing untrusted clients, added to the configuration pyvoy writes.

- **HTTP/1.0**, which load balancers' health checks speak (often with no ``Host``), is answered.
"""

from __future__ import annotations

from typing import Any

from app.server.serving import url_host
from app.settings.config import Settings


def harden_connection_manager(manager: dict[str, Any], settings: Settings) -> None:
    """The HTTP connection manager's HTTP/1.0."""
    manager.update(
        http_protocol_options={
            "accept_http_10": True,
            "default_host_for_http_10": url_host(settings.http_host),
        },
    )
