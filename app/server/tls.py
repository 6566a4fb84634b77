"""TLS for both transports from ``PORTICO_TLS_CERT`` / ``_KEY`` (and ``_CLIENT_CA`` for gRPC).

The files are loaded once at start, so a key that does not match its certificate, or a file
that is not PEM, stops the start with one line instead of failing every handshake later.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc

from app.settings.config import ConfigurationError, Settings


def check_tls_files(settings: Settings) -> None:
    """Raise ConfigurationError unless the certificate, key and client CA load and match."""
    if not settings.tls:
        return
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with _loading("PORTICO_TLS_CERT/PORTICO_TLS_KEY", _CHAIN_AND_KEY):
        context.load_cert_chain(settings.tls_cert, settings.tls_key)
    if settings.tls_client_ca:
        with _loading("PORTICO_TLS_CLIENT_CA", _CAS):
            context.load_verify_locations(settings.tls_client_ca)


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


def check_upstream_tls(settings: Settings) -> None:
    """Raise ConfigurationError unless the upstream CA and client certificate load and match."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if settings.upstream_ca:
        with _loading("PORTICO_UPSTREAM_CA", _CAS):
            context.load_verify_locations(settings.upstream_ca)
    if settings.upstream_cert:
        with _loading("PORTICO_UPSTREAM_CERT/PORTICO_UPSTREAM_KEY", _CHAIN_AND_KEY):
            context.load_cert_chain(settings.upstream_cert, settings.upstream_key)


_CHAIN_AND_KEY = "a PEM certificate chain and the PEM private key that matches it"
_CAS = "PEM CA certificates"


@contextlib.contextmanager
def _loading(names: str, allowed: str) -> Iterator[None]:
    """One line naming the settings when their files cannot be loaded, instead of a traceback."""
    try:
        yield
    except (ssl.SSLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise ConfigurationError(
            f"{names}: cannot use it ({exc.__class__.__name__}: {reason}); allowed: {allowed}"
        ) from None


def upstream_credentials(settings: Settings) -> grpc.ChannelCredentials | None:
    """Channel credentials for the upstreams: None for plaintext, else TLS with the system
    roots or the given CA, and the client certificate when one is set."""
    if not (settings.upstream_tls or settings.upstream_ca):
        return None

    def read(path: str) -> bytes | None:
        return Path(path).read_bytes() if path else None

    return grpc.ssl_channel_credentials(
        root_certificates=read(settings.upstream_ca),
        private_key=read(settings.upstream_key),
        certificate_chain=read(settings.upstream_cert),
    )
