"""TLS for both transports from ``PORTICO_TLS_CERT`` / ``_KEY`` (and ``_CLIENT_CA`` for gRPC).

The files are loaded once at start, so a key that does not match its certificate, or a file
that is not PEM, stops the start with one line instead of failing every handshake later.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import grpc

from app.config import ConfigurationError, Settings


def check_tls_files(settings: Settings) -> None:
    """Raise ConfigurationError unless the certificate, key and client CA load and match."""
    if not settings.tls:
        return
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(settings.tls_cert, settings.tls_key)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigurationError(
            f"PORTICO_TLS_CERT/PORTICO_TLS_KEY: cannot use them ({exc.__class__.__name__}: "
            f"{getattr(exc, 'reason', None) or exc}); allowed: a PEM certificate chain and "
            "the PEM private key that matches it"
        ) from None
    if settings.tls_client_ca:
        try:
            context.load_verify_locations(settings.tls_client_ca)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigurationError(
                f"PORTICO_TLS_CLIENT_CA: cannot use it ({getattr(exc, 'reason', None) or exc}); "
                "allowed: PEM CA certificates"
            ) from None


def grpc_credentials(settings: Settings) -> grpc.ServerCredentials | None:
    """Server credentials for gRPC, requiring a client certificate when a client CA is set."""
    if not settings.tls:
        return None
    client_ca = Path(settings.tls_client_ca).read_bytes() if settings.tls_client_ca else None
    return grpc.ssl_server_credentials(
        [(Path(settings.tls_key).read_bytes(), Path(settings.tls_cert).read_bytes())],
        root_certificates=client_ca,
        require_client_auth=client_ca is not None,
    )


def uvicorn_tls(settings: Settings) -> dict[str, Any]:
    """uvicorn's TLS options for the REST side (no client certificates: browsers call it)."""
    if not settings.tls:
        return {}
    return {"ssl_certfile": settings.tls_cert, "ssl_keyfile": settings.tls_key}
