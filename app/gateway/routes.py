"""The HTTP side of every RPC: one precompiled ASGI dispatcher over the registry's bindings.

Per-request work is a trie lookup, JSON ↔ message conversion and the servicer call; everything
per method (plans, bound servicer methods) is computed once. FastAPI only hosts it (see
:func:`create_app`), so its per-route machinery never runs on an RPC.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import itertools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import grpc
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from app.gateway import streaming
from app.gateway.codec import (
    JsonOptions,
    assign_text,
    dump_json,
    field_key,
    load_json,
    parse_into,
    path_name,
    resolve_field_path,
    set_text_value,
    to_dict,
)
from app.gateway.context import GatewayContext, Metadata, current_identity
from app.gateway.dashboard import add_dashboard
from app.gateway.errors import (
    BadRequest,
    GatewayError,
    body_too_large,
    internal_error,
    method_not_allowed,
    not_found,
    unsupported_media_type,
)
from app.gateway.http_rules import (
    MethodNotAllowed,
    NoRoute,
    RouteMatch,
    RouteTable,
    build_route_table,
    is_bound,
)
from app.gateway.openapi import openapi_document
from app.gateway.registry import Method, Registry

log = logging.getLogger("portico.gateway")

_RENDER_CACHE_ENTRIES = 1024
_RENDER_CACHE_MAX_BYTES = 4096

# Resolves the caller from request metadata; raises GatewayError(UNAUTHENTICATED, ...) to refuse.
Authenticate = Callable[[Method, Metadata], Awaitable[object]]

_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


@dataclass(frozen=True)
class GatewayOptions:
    """Transport policy for the HTTP side; ``main`` fills it from ``Settings``."""

    json: JsonOptions = field(default_factory=JsonOptions)
    max_body_bytes: int = 4 * 1024 * 1024
    cors_origins: tuple[str, ...] = ()
    authenticate: Authenticate | None = None
    # Served at /openapi.json; None: derived from the registry (public when nothing authenticates).
    openapi: Mapping[str, Any] | None = None


class _Call:
    """A request on its way to a servicer: everything but the message.

    A plain slotted class: one is built per request, and a frozen dataclass costs several
    times more to construct.
    """

    __slots__ = ("context", "headers", "method", "request_id")

    def __init__(
        self,
        method: Method,
        request_id: str,
        headers: dict[bytes, bytes],
        context: GatewayContext,
    ) -> None:
        self.method = method
        self.request_id = request_id
        self.headers = headers
        self.context = context


class RpcDispatcher:
    """ASGI app serving every binding of every method in ``registry`` from ``servicers``."""

    def __init__(
        self, registry: Registry, servicers: Mapping[str, object], options: GatewayOptions
    ) -> None:
        self.options = options
        self.routes: RouteTable = build_route_table(registry)
        self._rendered: dict[tuple[type, str, bool, bytes], bytes] = {}
        # Bound servicer methods, looked up once; a missing servicer answers UNIMPLEMENTED.
        self._handlers: dict[str, Callable[..., Any] | None] = {
            m.grpc_path: getattr(servicers.get(m.service), m.name, None) for m in registry
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        headers = dict(scope["headers"])
        request_id = _request_id(headers)
        try:
            match = self.routes.match(scope["method"], _raw_path(scope))
        except NoRoute:
            await self._send_error(send, not_found(scope["path"]), request_id)
            return
        except MethodNotAllowed as exc:
            error = method_not_allowed(scope["method"], scope["path"], exc.allow)
            await self._send_error(send, error, request_id)
            return
        try:
            call = self._call(match.plan.method, headers, request_id, scope)
        except GatewayError as exc:
            await self._send_error(send, exc, request_id)
            return
        if match.plan.method.kind == "unary":
            await self._unary(call, match, scope, receive, send)
        else:
            await self._streaming(call, match, scope, receive, send)

    # -- unary --------------------------------------------------------------------------------

    async def _unary(
        self, call: _Call, match: RouteMatch, scope: Scope, receive: Receive, send: Send
    ) -> None:
        context = call.context
        try:
            # Who is calling is settled first: an anonymous caller learns nothing from its input.
            await self._authenticate(call)
            body = b""
            if match.plan.body:
                _check_content_type(call.headers, b"application/json")
                body = await _read_body(receive, call.headers, self.options.max_body_bytes)
            request = self._request(match, scope, body)
            reply = await self._invoke(call, request)
        except GatewayError as exc:
            await self._send_error(send, exc, call.request_id, context)
            return
        payload = self._reply_json(match, reply)
        await _send(send, 200, b"application/json", payload, call.request_id, context)

    async def _invoke(self, call: _Call, request: Any) -> Any:
        """Run the servicer under the deadline, and turn every ending into a reply."""
        context = call.context
        handler = self._handler(call.method)
        try:
            if context.deadline is None:
                reply = await handler(request, context)
            else:
                async with asyncio.timeout_at(_loop_time(context.deadline)):
                    reply = await handler(request, context)
        except GatewayError:
            raise
        except TimeoutError as exc:
            if context.time_remaining() == 0:
                context.cancel()
                raise GatewayError(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded") from exc
            raise self._unexpected(call, exc) from exc
        except Exception as exc:
            raise self._unexpected(call, exc) from exc
        finally:
            context.finish()
        error = context.status_error()
        if error is not None:
            raise error
        if not isinstance(reply, call.method.output_type):
            log.error(
                "%s returned %r (request id %s)",
                call.method.full_name,
                type(reply),
                call.request_id,
            )
            raise internal_error()
        return reply

    def _unexpected(self, call: _Call, exc: Exception) -> GatewayError:
        context = call.context
        # A status set before raising (as generated base servicers do) is what grpc reports too.
        error = context.status_error()
        if error is not None:
            return error
        log.error(
            "unexpected error in %s (request id %s)",
            call.method.full_name,
            call.request_id,
            exc_info=exc,
        )
        return internal_error()

    def _handler(self, method: Method) -> Callable[..., Any]:
        handler = self._handlers[method.grpc_path]
        if handler is None:
            raise GatewayError(grpc.StatusCode.UNIMPLEMENTED, f"{method.full_name} is not served")
        return handler

    async def _authenticate(self, call: _Call) -> None:
        if self.options.authenticate is not None:
            metadata = call.context.invocation_metadata()
            current_identity.set(await self.options.authenticate(call.method, metadata))

    # -- streaming ----------------------------------------------------------------------------

    async def _streaming(
        self, call: _Call, match: RouteMatch, scope: Scope, receive: Receive, send: Send
    ) -> None:
        worker = asyncio.ensure_future(self._stream_call(call, match, scope, send, receive))
        try:
            await worker
        except asyncio.CancelledError:
            if not worker.cancelled():
                raise  # we were cancelled ourselves, not by a disconnect

    async def _stream_call(
        self,
        call: _Call,
        match: RouteMatch,
        scope: Scope,
        send: Send,
        receive: Receive,
    ) -> None:
        context = call.context
        pump = _pump_cancelling_on_disconnect(receive, context)
        method = call.method
        framing = streaming.framing_for(call.headers.get(b"accept", b"").decode("latin-1"))
        started = False
        try:
            await self._authenticate(call)
            if method.client_streaming:
                _check_content_type(call.headers, b"application/x-ndjson", b"application/json")
                request: Any = streaming.ndjson_messages(
                    pump.payloads(),
                    method.input_type,
                    self.options.json,
                    self.options.max_body_bytes,
                )
                context.read_from(request)
            else:
                if match.plan.body:
                    _check_content_type(call.headers, b"application/json")
                _check_length(call.headers, self.options.max_body_bytes)
                body = await pump.read_body(self.options.max_body_bytes)
                request = self._request(match, scope, body)
            if not method.server_streaming:
                reply = await self._invoke(call, request)
                payload = self._reply_json(match, reply)
                await _send(send, 200, b"application/json", payload, call.request_id, context)
                return
            handler = self._handler(method)
            replies = context.replies(handler(request, context))
            if framing.opening:
                started = True
                context.headers_sent = True
                await _start(send, 200, framing.content_type, call.request_id, context)
                await send(
                    {"type": "http.response.body", "body": framing.opening, "more_body": True}
                )
            async with asyncio.timeout_at(
                None if context.deadline is None else _loop_time(context.deadline)
            ):
                async for reply in replies:
                    frame = framing.frame(self._reply_json(match, reply, streamed=True))
                    if not started:
                        started = True
                        context.headers_sent = True
                        await _start(send, 200, framing.content_type, call.request_id, context)
                    await send({"type": "http.response.body", "body": frame, "more_body": True})
            error = context.status_error()
        except GatewayError as exc:
            error = exc
        except TimeoutError:
            context.cancel()
            error = GatewayError(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded")
        except Exception as exc:
            error = self._unexpected(call, exc)
        finally:
            context.finish()
            pump.stop()
        if not started:
            if error is not None:
                await self._send_error(send, error, call.request_id, context)
                return
            await _start(send, 200, framing.content_type, call.request_id, context)
        tail = b"" if error is None else framing.error(error, self.options.json)
        await send({"type": "http.response.body", "body": tail, "more_body": False})

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A bidirectional (or any streaming) RPC over a WebSocket on one of its HTTP paths."""
        if (await receive())["type"] != "websocket.connect":
            return
        headers = dict(scope["headers"])
        subprotocol = _websocket_credentials(scope.get("subprotocols") or (), headers)
        request_id = _request_id(headers)
        plans = self.routes.methods_for_path(_raw_path(scope))
        streaming_plans = [
            p for p in plans.values() if p.method.client_streaming and p.method.server_streaming
        ]
        if not streaming_plans:
            await send(
                {"type": "websocket.close", "code": 1008, "reason": "no bidirectional RPC here"}
            )
            return
        plan = streaming_plans[0]
        try:
            call = self._call(plan.method, headers, request_id, scope)
        except GatewayError as exc:
            await send({"type": "websocket.close", "code": 1008, "reason": exc.message[:120]})
            return
        await send(
            {
                "type": "websocket.accept",
                "subprotocol": subprotocol,
                "headers": [(b"x-request-id", request_id.encode())],
            }
        )
        worker = asyncio.ensure_future(self._websocket_call(call, plan, send, receive))
        try:
            await worker
        except asyncio.CancelledError:
            if not worker.cancelled():
                raise

    async def _websocket_call(self, call: _Call, plan: Any, send: Send, receive: Receive) -> None:
        context = call.context
        pump = _pump_cancelling_on_disconnect(receive, context)
        match = RouteMatch(plan, ())
        error: GatewayError | None = None
        try:
            await self._authenticate(call)
            requests = streaming.ndjson_messages(
                pump.payloads(),
                call.method.input_type,
                self.options.json,
                self.options.max_body_bytes,
            )
            context.read_from(requests)
            handler = self._handler(call.method)
            async for reply in context.replies(handler(requests, context)):
                text = self._reply_json(match, reply, streamed=True).decode()
                await send({"type": "websocket.send", "text": text})
            error = context.status_error()
        except GatewayError as exc:
            error = exc
        except Exception as exc:
            error = self._unexpected(call, exc)
        finally:
            context.finish()
            pump.stop()
        if error is not None:
            status = error.status_dict(self.options.json.proto_names)
            await send({"type": "websocket.send", "text": dump_json({"error": status}).decode()})
        await send({"type": "websocket.close", "code": 1000})

    # -- requests and replies -----------------------------------------------------------------

    def _call(
        self, method: Method, headers: dict[bytes, bytes], request_id: str, scope: Scope
    ) -> _Call:
        client = scope.get("client")
        peer = ""
        if client:
            host, port = client[0], client[1]
            peer = f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"
        metadata, deadline = _metadata(headers, request_id)
        return _Call(method, request_id, headers, GatewayContext(metadata, peer, deadline))

    def _request(self, match: RouteMatch, scope: Scope, body: bytes) -> Any:
        """The request message: body, then path variables, then query parameters."""
        plan = match.plan
        options = self.options.json
        request = plan.method.input_type()
        if body:
            value = load_json(body)
            if plan.body == "*":
                parse_into(value, request, options)
            else:
                parse_into({plan.body: value}, request, options)
        # Plain string fields are set directly; the rest go through the JSON mapping as a tree.
        tree: dict[str, Any] = {}
        for fields, text in match.path_values:
            if not assign_text(request, fields, text):
                set_text_value(tree, fields, text, repeat=False)
        query = scope.get("query_string", b"")
        if query:
            self._bind_query(plan, request, query, tree)
        if tree:
            parse_into(tree, request, JsonOptions(options.proto_names, ignore_unknown=False))
        return request

    def _bind_query(self, plan: Any, request: Any, query: bytes, tree: dict[str, Any]) -> None:
        try:
            pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True, errors="strict")
        except (UnicodeDecodeError, ValueError) as exc:
            raise BadRequest(f"query string is not valid UTF-8: {exc}") from exc
        desc = request.DESCRIPTOR
        seen: set[str] = set()
        for key, text in pairs:
            fields = resolve_field_path(desc, key, self.options.json.ignore_unknown)
            if fields is None:
                continue
            name = path_name(fields)
            if plan.bound and is_bound(name, plan.bound):
                raise BadRequest(
                    f"query parameter {key!r} sets a field the path or body already binds",
                    [(key, "bound by the path or the body")],
                )
            if name in seen or not assign_text(request, fields, text):
                set_text_value(tree, fields, text, repeat=name in seen)
            seen.add(name)

    def _reply_value(self, match: RouteMatch, reply: Any) -> Any:
        value = to_dict(reply, self.options.json)
        response_body = match.plan.response_body
        if response_body:
            desc = reply.DESCRIPTOR.fields_by_name[response_body]
            return value.get(field_key(desc, self.options.json))
        return value

    def _reply_json(self, match: RouteMatch, reply: Any, *, streamed: bool = False) -> bytes:
        """The reply as JSON (``{"result": ...}`` when ``streamed``).

        Rendering JSON costs more than the rest of a small call, and the same replies recur (a
        version, an unchanged object, one event sent to every subscriber): recent small
        renderings are remembered by the reply's bytes.
        """
        wire = reply.SerializeToString(deterministic=True)
        if len(wire) > _RENDER_CACHE_MAX_BYTES:
            return self._render(match, reply, streamed)
        key = (type(reply), match.plan.response_body, streamed, wire)
        rendered = self._rendered.get(key)
        if rendered is None:
            rendered = self._render(match, reply, streamed)
            if len(self._rendered) >= _RENDER_CACHE_ENTRIES:
                del self._rendered[next(iter(self._rendered))]  # the oldest
            self._rendered[key] = rendered
        return rendered

    def _render(self, match: RouteMatch, reply: Any, streamed: bool) -> bytes:
        value = self._reply_value(match, reply)
        return dump_json({"result": value} if streamed else value)

    async def _send_error(
        self,
        send: Send,
        error: GatewayError,
        request_id: str,
        context: GatewayContext | None = None,
    ) -> None:
        payload = error.status_json(self.options.json.proto_names)
        await _send(
            send,
            error.http_status,
            b"application/json",
            payload,
            request_id,
            context,
            error.headers,
        )


WEBSOCKET_SUBPROTOCOL = "portico.json"
_BEARER_SUBPROTOCOL = "bearer."


def _websocket_credentials(offered: Sequence[str], headers: dict[bytes, bytes]) -> str | None:
    """The subprotocol to accept, after taking a token offered as ``bearer.<token>``.

    Browsers cannot set headers on a WebSocket, so they may offer the token as a subprotocol
    beside ``portico.json`` (as Kubernetes does for its API server); the answer names
    ``portico.json`` only, never the token. An Authorization header still wins.
    """
    for protocol in offered:
        if protocol.startswith(_BEARER_SUBPROTOCOL) and b"authorization" not in headers:
            token = protocol[len(_BEARER_SUBPROTOCOL) :]
            headers[b"authorization"] = b"Bearer " + token.encode("latin-1")
    return WEBSOCKET_SUBPROTOCOL if WEBSOCKET_SUBPROTOCOL in offered else None


def _pump_cancelling_on_disconnect(
    receive: Receive, context: GatewayContext
) -> streaming.InboundPump:
    """Start reading the client; if it goes away, cancel the call's context and this task."""
    task = asyncio.current_task()
    assert task is not None

    def on_disconnect() -> None:
        context.cancel()
        task.cancel()

    pump = streaming.InboundPump(receive, on_disconnect)
    pump.start()
    return pump


def _raw_path(scope: Scope) -> str:
    # Routing needs the undecoded path (an encoded "/" inside a variable is not a separator);
    # some servers put the query string in raw_path too.
    raw = scope.get("raw_path")
    if not raw:
        return scope["path"]
    return raw.decode("latin-1").split("?", 1)[0]


# Request ids: a random per-process prefix and a counter, unique without a syscall per request.
_REQUEST_PREFIX = os.urandom(8).hex()
_request_numbers = itertools.count(1)


def _request_id(headers: dict[bytes, bytes]) -> str:
    given = headers.get(b"x-request-id")
    if given and len(given) <= 128:
        return given.decode("latin-1")
    return f"{_REQUEST_PREFIX}{next(_request_numbers):016x}"


def _metadata(headers: dict[bytes, bytes], request_id: str) -> tuple[Metadata, float | None]:
    """gRPC metadata and the deadline from HTTP headers (ASGI names them in lower case)."""
    metadata: list[tuple[str, str | bytes]] = [("x-request-id", request_id)]
    deadline = None
    for raw_key, raw_value in headers.items():
        if raw_key == b"authorization":
            metadata.append(("authorization", raw_value.decode("latin-1")))
        elif raw_key.startswith(b"grpc-"):
            key = raw_key.decode("latin-1")
            value = raw_value.decode("latin-1")
            if key.startswith("grpc-metadata-"):
                name = key[len("grpc-metadata-") :]
                if name.endswith("-bin"):
                    try:
                        padded = value + "=" * (-len(value) % 4)
                        metadata.append((name, base64.b64decode(padded, validate=True)))
                    except binascii.Error as exc:
                        raise BadRequest(
                            f"header {key} is not base64", [(key, "not base64")]
                        ) from exc
                else:
                    metadata.append((name, value))
            elif key == "grpc-timeout":
                deadline = time.monotonic() + _timeout_seconds(value)
    return tuple(metadata), deadline


def _timeout_seconds(value: str) -> float:
    unit = _TIMEOUT_UNITS.get(value[-1:])
    digits = value[:-1]
    if unit is None or not digits.isdigit() or len(digits) > 8:
        raise BadRequest(
            f"grpc-timeout {value!r} is not like 10S or 500m", [("grpc-timeout", "bad format")]
        )
    return int(digits) * unit


def _loop_time(deadline: float) -> float:
    # Deadlines are time.monotonic() values; the loop clock may differ.
    return asyncio.get_running_loop().time() + (deadline - time.monotonic())


def _check_content_type(headers: dict[bytes, bytes], *accepted: bytes) -> None:
    content_type = headers.get(b"content-type")
    if content_type is None:
        return  # curl without -H; the body must still be JSON
    mime = content_type.split(b";", 1)[0].strip().lower()
    if mime not in accepted:
        raise unsupported_media_type(content_type.decode("latin-1"), accepted[0].decode())


def _check_length(headers: dict[bytes, bytes], limit: int) -> None:
    length = headers.get(b"content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise body_too_large(limit)


async def _read_body(receive: Receive, headers: dict[bytes, bytes], limit: int) -> bytes:
    _check_length(headers, limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            raise GatewayError(grpc.StatusCode.CANCELLED, "client went away")
        chunk = event.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise body_too_large(limit)
        chunks.append(chunk)
        if not event.get("more_body", False):
            return b"".join(chunks)


def _response_headers(
    content_type: bytes,
    request_id: str,
    context: GatewayContext | None,
    extra: tuple[tuple[str, str], ...] = (),
) -> list[tuple[bytes, bytes]]:
    headers = [(b"content-type", content_type), (b"x-request-id", request_id.encode("latin-1"))]
    if context is not None and (context.initial_metadata or context.trailing_metadata_sent):
        for key, value in (*context.initial_metadata, *context.trailing_metadata_sent):
            if key == "grpc-status-details-bin":
                continue  # already the Status body
            text = base64.b64encode(value).decode() if isinstance(value, bytes) else value
            headers.append((b"grpc-metadata-" + key.encode("latin-1"), text.encode("latin-1")))
    for key, text in extra:
        headers.append((key.encode(), text.encode("latin-1")))
    return headers


async def _start(
    send: Send,
    status: int,
    content_type: bytes,
    request_id: str,
    context: GatewayContext | None,
    extra: tuple[tuple[str, str], ...] = (),
) -> None:
    headers = _response_headers(content_type, request_id, context, extra)
    await send({"type": "http.response.start", "status": status, "headers": headers})


async def _send(
    send: Send,
    status: int,
    content_type: bytes,
    payload: bytes,
    request_id: str,
    context: GatewayContext | None,
    extra: tuple[tuple[str, str], ...] = (),
) -> None:
    headers = _response_headers(content_type, request_id, context, extra)
    # A known length lets the server send the reply in one piece instead of chunked.
    headers.append((b"content-length", str(len(payload)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


class GatewayApp:
    """The ASGI app: RPC bindings go straight to the dispatcher, the few fixed pages to FastAPI.

    FastAPI's per-request machinery (middleware stack, route scan, dependency handling) costs
    more than a whole small RPC, so RPCs never pass through it; ``/healthz``, ``/readyz``,
    ``/openapi.json``, ``/docs`` and the dashboard (a mount) are ordinary FastAPI routes.
    """

    def __init__(self, api: FastAPI, dispatcher: RpcDispatcher) -> None:
        self.api = api
        self.dispatcher = dispatcher
        self.pages = frozenset(getattr(route, "path", "") for route in api.routes)
        self.mounts = tuple(f"{route.path}/" for route in api.routes if isinstance(route, Mount))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or (
            scope["path"] in self.pages or scope["path"].startswith(self.mounts)
        ):
            await self.api(scope, receive, send)
        else:
            await self.dispatcher(scope, receive, send)


def create_app(
    registry: Registry,
    servicers: Mapping[str, object],
    options: GatewayOptions | None = None,
    ready: Callable[[], Awaitable[bool]] | None = None,
) -> ASGIApp:
    """The gateway: ``/healthz``, ``/readyz``, the OpenAPI pages, the dashboard, and every RPC
    binding."""
    options = options or GatewayOptions()
    api = FastAPI(title="Portico", openapi_url=None, docs_url=None, redoc_url=None)

    @api.get("/healthz", include_in_schema=False)
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @api.get("/readyz", include_in_schema=False)
    async def readyz() -> JSONResponse:
        if ready is not None and not await ready():
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ready"})

    _add_openapi_routes(api, registry, options)
    add_dashboard(api)
    app: ASGIApp = GatewayApp(api, RpcDispatcher(registry, servicers, options))
    if options.cors_origins:
        app = CORSMiddleware(
            app,
            allow_origins=list(options.cors_origins),
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["x-request-id"],
        )
    return app


def _add_openapi_routes(app: FastAPI, registry: Registry, options: GatewayOptions) -> None:
    """``/openapi.json`` (the document, encoded on first use) and ``/docs`` (Swagger UI over it)."""

    @functools.cache
    def payload() -> bytes:
        document = options.openapi
        if document is None:
            secured = options.authenticate is not None
            document = openapi_document(
                registry,
                options.json,
                title="Portico",
                version="0.0.0",
                public_methods=lambda method: not secured,
            )
        return dump_json(document)

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_json() -> Response:
        return Response(payload(), media_type="application/json")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="Portico API")
