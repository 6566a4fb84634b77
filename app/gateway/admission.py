"""The two stock authenticate hooks (see ``app/gateway/options.py``): refuse, or admit all.

A server built without a hook refuses every call: a wiring mistake must fail closed, so
admitting everyone takes the explicit :data:`NO_AUTH` (tests and tools that serve no real
callers).
"""

from __future__ import annotations

import grpc

from app.gateway.context import Metadata
from app.gateway.errors import GatewayError
from app.gateway.registry import Method


async def refuse_every_call(method: Method, metadata: Metadata, peer: object = None) -> object:
    """The default: no authentication was configured, so nobody is admitted."""
    raise GatewayError(
        grpc.StatusCode.UNAUTHENTICATED, "this server has no authentication configured"
    )


async def admit_every_call(method: Method, metadata: Metadata, peer: object = None) -> object:
    """Admit every call anonymously (say so explicitly, as :data:`NO_AUTH`)."""
    return None


NO_AUTH = admit_every_call
