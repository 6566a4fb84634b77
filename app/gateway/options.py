"""What the gateway is told from outside: transport policy and the authenticate hook."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from google.protobuf.message import Message

from app.gateway.admission import refuse_every_call
from app.gateway.codec.json_mapping import JsonOptions
from app.gateway.context import Metadata
from app.gateway.errors import GatewayError
from app.gateway.open_streams import OpenStreams
from app.gateway.registry import Method
from app.observe.calls import Telemetry
from app.settings import limits

# The connection's peer as gRPC names it (``ipv4:10.0.0.1:5000``), formatted only when asked.
Peer = Callable[[], str]
# Resolves the caller from request metadata (and the peer, for anonymous callers); raises
# GatewayError(UNAUTHENTICATED, ...) to refuse. Both transports call it (the gRPC server's
# interceptor and the HTTP flows), so it is one gate; what it returns is the gate's business (it
# hands the caller to servicers itself).
Authenticate = Callable[[Method, Metadata, Peer], Awaitable[object]]
# The status an exception from outside the gateway stands for (a servicer's or a hook's, given
# the call's request id): the store's UNAVAILABLE with its retry delay, say. None: a bug, which
# is logged and answered INTERNAL. Both transports ask it, so an error means one thing on each.
KnownErrors = Callable[[Exception, str], GatewayError | None]


def no_known_errors(exc: Exception, request_id: str) -> GatewayError | None:
    """Every foreign exception is a bug (the default)."""
    return None


class Idempotency(Protocol):
    """Runs a keyed call at most once per (caller, key): ``run`` the first time, else the first
    outcome again. Errors (the call's own or a refusal of the key) are raised as GatewayError.
    (:mod:`app.gateway.idempotency` decides which calls take a key and hands them to it.)"""

    async def __call__(
        self, method: Method, key: str, request: Message, run: Callable[[], Awaitable[Message]]
    ) -> Message: ...


@dataclass(frozen=True)
class GatewayOptions:
    """Transport policy for the HTTP side; ``main`` fills it from ``Settings``."""

    json: JsonOptions = field(default_factory=JsonOptions)
    max_body_bytes: int = limits.DEFAULT_MAX_BODY_BYTES
    # A request body (of a call that is not a client stream) must arrive within this.
    body_timeout_seconds: float = limits.DEFAULT_BODY_TIMEOUT_SECONDS
    # Open streams: kept alive while idle, ended with UNAVAILABLE on shutdown. The gRPC server
    # is handed the same registry, so one shutdown ends the streams of both transports.
    streams: OpenStreams = field(default_factory=OpenStreams)
    cors_origins: tuple[str, ...] = ()
    # The process a user started (a worker's supervisor): /readyz names it, so that a check of
    # the server just started cannot be answered by another one on the same port.
    server_pid: int = field(default_factory=os.getpid)
    # Connect and gRPC-Web answer /package.Service/Method and this prefix + that path.
    rpc_prefix: str = "/api"
    # Refuses every call unless given: pass admission.NO_AUTH to admit everyone on purpose.
    authenticate: Authenticate = refuse_every_call
    # What each call records (metrics, spans, request log lines); all off by default.
    telemetry: Telemetry = field(default_factory=Telemetry)
    # Serve Prometheus metrics at /metrics; a non-empty token is then required as a bearer token.
    metrics_endpoint: bool = False
    metrics_token: str = ""
    # What an exception raised by a servicer or a hook stands for (see KnownErrors).
    known_errors: KnownErrors = no_known_errors
    # Runs calls that carry an idempotency key at most once (None: keys are not honoured).
    idempotency: Idempotency | None = None
    # A unary call whose client goes away is cancelled (REST and Connect): a task per call,
    # worth it where the work goes on elsewhere (portico proxy's upstream).
    cancel_unary_on_disconnect: bool = False
    # Native gRPC behind Portico's own Envoy (pyvoy), which replaces any client's
    # x-forwarded-client-cert header with the verified client certificate: trusted then only.
    client_certificate_header: bool = False
    # With a client CA: native gRPC calls must present a certificate it signed, as on the
    # grpc.aio port (HTTP clients, browsers among them, need none).
    grpc_client_certificate_required: bool = False
    # The port on this host where native gRPC is served (the HTTP port under pyvoy, the grpc.aio
    # port under uvicorn), said in a header of /openapi.json for the dashboard's "Copy as
    # grpcurl"; None where nothing serves it (the proxy under uvicorn).
    grpc_port: int | None = None
    # Served at /openapi.json; None: derived from the registry (public when nothing authenticates).
    openapi: Mapping[str, Any] | None = None
    # Serialized FileDescriptorSets (concatenated) whose copies of the served files, with their
    # comments, /descriptors.binpb serves in place of the registry's own (see descriptor_set).
    descriptor_sets: bytes = b""
