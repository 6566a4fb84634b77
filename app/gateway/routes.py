"""The gateway's ASGI app: which path goes where, and :func:`create_app` assembling it.

Two kinds of path exist: the gateway's own few pages (health, OpenAPI, descriptors, the
dashboard), served by FastAPI, and every RPC binding, served by the dispatchers. The pages are
listed in a table built with them, so a request is routed by one set lookup; FastAPI's
per-request machinery (middleware stack, route scan, dependency handling) costs more than a
whole small RPC, so RPCs never pass through it.

The protocol flows (Connect, gRPC-Web, native gRPC, WebSocket) are built here over the same
:class:`~app.gateway.stages.Stages` (route table, transcoder, gate and invoker) as REST's; a
:class:`~app.gateway.protocols.detect.ProtocolSwitch` sends each RPC request to its protocol's flow.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.gateway import descriptor_set
from app.gateway.admission import NO_AUTH
from app.gateway.codec.json_mapping import dump_json
from app.gateway.codec.transcoding import Transcoder
from app.gateway.dispatch import RpcDispatcher
from app.gateway.http_rules import build_route_table
from app.gateway.idempotency import IdempotentInvoker
from app.gateway.invoker import Invoker, ServicerInvoker
from app.gateway.openapi.document import openapi_document
from app.gateway.options import GatewayOptions
from app.gateway.pages import api_docs, dashboard
from app.gateway.protocols.detect import ProtocolSwitch
from app.gateway.protocols.websocket import WebSocketDispatcher
from app.gateway.registry import Registry
from app.gateway.stages import Stages
from app.observe import loop_counters
from app.observe.exposition import METRICS_PATH, token_accepted
from app.observe.metrics import exposition

HEALTH_PATHS = ("/healthz", "/readyz")
# On /readyz: the id of the process serving (see GatewayOptions.server_pid, `portico ready`).
SERVER_PID_HEADER = "Portico-Server-Pid"
# On /openapi.json: the port of this host that serves native gRPC (GatewayOptions.grpc_port).
GRPC_PORT_HEADER = "Portico-Grpc-Port"
OPENAPI_PATHS = ("/openapi.json",)
# What browser clients of the RPC protocols must be able to read from a cross-origin answer.
EXPOSED_HEADERS = (
    "x-request-id",
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "grpc-accept-encoding",
    "connect-accept-encoding",
    "content-encoding",
)


@dataclass(frozen=True)
class Readiness:
    """What ``/readyz`` answers: whether to send this server calls (200, else 503), the body
    saying so (its ``status``, and anything amiss a probe's reader should see), and what
    ``/readyz?verbose`` adds to it."""

    ready: bool
    body: Mapping[str, object] = field(default_factory=lambda: {"status": "ready"})
    details: Mapping[str, object] = field(default_factory=dict)


# Asked at every /readyz.
Ready = Callable[[], Awaitable[Readiness]]


@dataclass(frozen=True)
class PageTable:
    """The paths the gateway's pages answer: exact paths, and prefixes of mounted folders."""

    paths: frozenset[str]
    prefixes: tuple[str, ...] = ()

    def claims(self, path: str) -> bool:
        return path in self.paths or path.startswith(self.prefixes)


class GatewayApp:
    """The ASGI app: the pages in ``table`` (and lifespan) to ``pages``, RPCs to the
    dispatchers by connection type."""

    def __init__(self, pages: ASGIApp, table: PageTable, http: ASGIApp, websocket: ASGIApp) -> None:
        self.pages = pages
        self.table = table
        self.http = http
        self.websocket = websocket

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or self.table.claims(scope["path"]):
            await self.pages(scope, receive, send)
        elif scope["type"] == "websocket":
            await self.websocket(scope, receive, send)
        else:
            await self.http(scope, receive, send)


def create_app(
    registry: Registry,
    servicers: Mapping[str, object],
    options: GatewayOptions | None = None,
    ready: Ready | None = None,
) -> ASGIApp:
    """The gateway: ``/healthz``, ``/readyz``, the OpenAPI pages, the dashboard, and every RPC
    binding, answered by the in-process ``servicers``."""
    options = options or GatewayOptions()
    invoker = ServicerInvoker(registry, servicers, options.known_errors)
    return gateway_app(registry, invoker, options, ready)


def gateway_app(
    registry: Registry,
    invoker: Invoker,
    options: GatewayOptions | None = None,
    ready: Ready | None = None,
) -> ASGIApp:
    """The gateway of :func:`create_app` over any :class:`Invoker` (a proxy's upstream, say)."""
    options = options or GatewayOptions()
    pages, table = _pages(registry, options, ready)
    if options.idempotency is not None:
        invoker = IdempotentInvoker(invoker, options.idempotency)
    stages = Stages(build_route_table(registry), Transcoder(options.json), invoker, options)
    http = ProtocolSwitch(stages, RpcDispatcher(stages), options.rpc_prefix)
    app: ASGIApp = GatewayApp(pages, table, http, WebSocketDispatcher(stages))
    if options.cors_origins:
        app = CORSMiddleware(
            app,
            allow_origins=list(options.cors_origins),
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=list(EXPOSED_HEADERS),
        )
    return app


def _pages(
    registry: Registry, options: GatewayOptions, ready: Ready | None
) -> tuple[FastAPI, PageTable]:
    """The FastAPI app of the fixed pages, and the table of the paths it answers."""
    api = FastAPI(title="Portico", openapi_url=None, docs_url=None, redoc_url=None)
    # Plain Starlette routes, as every page here: FastAPI's endpoint analysis keeps each endpoint
    # it has seen in module-level caches (thousands), and with it all a closure holds, here the
    # whole server. A process starting many servers (the test suite) kept every one of them,
    # and their garbage collections grew to pauses of a second.

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    served_by = {SERVER_PID_HEADER: str(options.server_pid)}

    async def readyz(request: Request) -> Response:
        answer = Readiness(True) if ready is None else await ready()
        body = dict(answer.body)
        if "verbose" in request.query_params:
            body |= answer.details
        return JSONResponse(body, status_code=200 if answer.ready else 503, headers=served_by)

    api.add_route("/healthz", healthz, methods=["GET", "HEAD"], include_in_schema=False)
    api.add_route("/readyz", readyz, methods=["GET", "HEAD"], include_in_schema=False)
    _add_openapi_routes(api, registry, options)
    _add_descriptor_route(api, registry, options)
    api_docs.add_api_docs(api)
    paths = {*HEALTH_PATHS, *OPENAPI_PATHS, descriptor_set.PATH, *api_docs.PATHS, *dashboard.PATHS}
    if options.metrics_endpoint:
        _add_metrics_route(api, options.metrics_token)
        paths.add(METRICS_PATH)
    if dashboard.add_dashboard(api):
        # The mount answers its own path (redirecting to the folder) and everything under it.
        return api, PageTable(
            frozenset({*paths, dashboard.PREFIX}), (*api_docs.PREFIXES, dashboard.FOLDER)
        )
    return api, PageTable(frozenset(paths), api_docs.PREFIXES)


def _add_metrics_route(app: FastAPI, token: str) -> None:
    """``/metrics``: Prometheus' text format (OpenMetrics when asked for), behind a bearer
    token when one is set."""

    async def metrics(request: Request) -> Response:
        if not token_accepted(request.headers.get("authorization"), token):
            return Response(
                "a bearer token is required\n",
                status_code=401,
                media_type="text/plain",
                headers={"www-authenticate": "Bearer"},
            )
        loop_counters.flush()  # this process's calls up to now (other workers' within a second)
        # Off the loop: with several workers a scrape reads and adds up every worker's file.
        payload, content_type = await asyncio.to_thread(exposition, request.headers.get("accept"))
        return Response(payload, media_type=content_type)

    app.add_route(METRICS_PATH, metrics, methods=["GET", "HEAD"], include_in_schema=False)


def _add_openapi_routes(app: FastAPI, registry: Registry, options: GatewayOptions) -> None:
    """``/openapi.json``: the document, encoded on first use."""

    @functools.cache
    def payload() -> bytes:
        document = options.openapi
        if document is None:
            secured = options.authenticate is not NO_AUTH
            document = openapi_document(
                registry,
                options.json,
                title="Portico",
                version="0.0.0",
                public_methods=lambda method: not secured,
            )
        return dump_json(document)

    where = {} if options.grpc_port is None else {GRPC_PORT_HEADER: str(options.grpc_port)}

    async def openapi_json(request: Request) -> Response:
        return Response(payload(), media_type="application/json", headers=where)

    app.add_route(OPENAPI_PATHS[0], openapi_json, methods=["GET", "HEAD"], include_in_schema=False)


def _add_descriptor_route(app: FastAPI, registry: Registry, options: GatewayOptions) -> None:
    """``/descriptors.binpb``: the FileDescriptorSet of what is served, made on first use. Public,
    as the OpenAPI document is: it says what the API is, never what it holds."""

    @functools.cache
    def payload() -> bytes:
        return descriptor_set.file_set(registry, options.descriptor_sets)

    async def descriptors(request: Request) -> Response:
        return Response(payload(), media_type=descriptor_set.MEDIA_TYPE)

    methods = ["GET", "HEAD"]
    app.add_route(descriptor_set.PATH, descriptors, methods=methods, include_in_schema=False)
