"""The WebSocket flow: a bidirectional RPC on one of its HTTP paths, one JSON message a frame.

Requests arrive as text frames (NDJSON lines), replies leave as ``{"result": ...}`` frames and a
failure as one ``{"error": Status}`` frame before the close. The caller passes the gate before
the upgrade is accepted: a refused one gets a plain HTTP answer (401/403 with the Status JSON),
never an open socket. Every frame is held to the body limit.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from starlette.types import Receive, Scope, Send

from app.gateway import http_io
from app.gateway.codec import streaming
from app.gateway.codec.json_mapping import dump_json
from app.gateway.errors import GatewayError
from app.gateway.http_rules import BindingPlan
from app.gateway.invoker import (
    Call,
    admit,
    new_call,
    stream_ending,
    unexpected_failure,
    until_deadline,
)
from app.gateway.stages import Stages

WEBSOCKET_SUBPROTOCOL = "portico.json"
_BEARER_SUBPROTOCOL = "bearer."


class WebSocketDispatcher:
    """ASGI app for WebSocket connections to the RPC bindings of the stages' route table."""

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        headers = dict(scope["headers"])
        subprotocol = _websocket_credentials(scope.get("subprotocols") or (), headers)
        request_id = http_io.request_id(headers)
        plans = self.stages.routes.methods_for_path(http_io.raw_path(scope))
        streaming_plans = [
            p for p in plans.values() if p.method.client_streaming and p.method.server_streaming
        ]
        if not streaming_plans:
            await send(
                {"type": "websocket.close", "code": 1008, "reason": "no bidirectional RPC here"}
            )
            return
        plan = streaming_plans[0]
        observation = self.stages.options.telemetry.rpc(
            "websocket", plan.method.full_name, True
        ).begin(request_id, *http_io.trace_context(headers))
        code = "INTERNAL"  # unless the call says otherwise
        try:
            try:
                call = new_call(plan.method, headers, request_id, scope, observation)
                try:
                    await admit(call, self.stages.options.authenticate)
                except GatewayError:
                    raise
                except Exception as exc:  # the gate's own failure (the store's UNAVAILABLE)
                    raise unexpected_failure(call, exc, self.stages.options.known_errors) from exc
            except GatewayError as exc:
                code = exc.code.name
                await self._refuse(scope, send, exc, request_id)
                return
            await send(
                {
                    "type": "websocket.accept",
                    "subprotocol": subprotocol,
                    "headers": [(b"x-request-id", request_id.encode())],
                }
            )
            worker = asyncio.ensure_future(self._call(call, plan, send, receive))
            try:
                code = await worker
            except asyncio.CancelledError:
                code = "CANCELLED"
                if not worker.cancelled():
                    raise
        finally:
            observation.end(code)

    async def _call(self, call: Call, plan: BindingPlan, send: Send, receive: Receive) -> str:
        """Run the call; returns the name of the gRPC code it ended with."""
        context = call.context
        streams = self.stages.options.streams
        try:
            stream = streams.enter()
        except GatewayError as exc:
            await self._close_with(send, exc)
            return exc.code.name
        pump = http_io.pump_cancelling_on_disconnect(receive, context)
        error: GatewayError | None = None
        try:
            requests = streaming.ndjson_messages(
                pump.payloads(),
                call.method.input_type,
                self.stages.options.json,
                self.stages.options.max_body_bytes,
            )
            context.read_from(requests)
            replies = self.stages.invoker.stream(call, requests)
            # The upgrade's grpc-timeout bounds the whole conversation, as for the other streams.
            async with contextlib.aclosing(replies), until_deadline(context):
                async for reply in replies:
                    text = self.stages.transcoder.reply_json(plan, reply, streamed=True).decode()
                    await send({"type": "websocket.send", "text": text})
            error = context.status_error()
        except (Exception, asyncio.CancelledError) as exc:
            error = stream_ending(call, self.stages.options, exc)
        finally:
            context.finish()
            pump.stop()
            streams.leave(stream)
        await self._close_with(send, error)
        return "OK" if error is None else error.code.name

    async def _close_with(self, send: Send, error: GatewayError | None) -> None:
        """The final ``{"error": Status}`` frame, if the call failed, and the close."""
        if error is not None:
            status = error.status_dict(self.stages.options.json.proto_names)
            await send({"type": "websocket.send", "text": dump_json({"error": status}).decode()})
        await send({"type": "websocket.close", "code": 1000})

    async def _refuse(self, scope: Scope, send: Send, error: GatewayError, request_id: str) -> None:
        """Answer the upgrade request with the error's HTTP status and Status JSON, where the
        server can (the ASGI WebSocket denial response); else close, which servers send as 403."""
        if "websocket.http.response" not in scope.get("extensions", {}):
            await send({"type": "websocket.close", "code": 1008})
            return
        payload = error.status_json(self.stages.options.json.proto_names)
        headers = [
            (b"content-type", b"application/json"),
            (b"x-request-id", request_id.encode("latin-1")),
            (b"content-length", str(len(payload)).encode()),
            *((k.encode(), v.encode("latin-1")) for k, v in error.headers),
        ]
        await send(
            {
                "type": "websocket.http.response.start",
                "status": error.http_status,
                "headers": headers,
            }
        )
        await send({"type": "websocket.http.response.body", "body": payload})


def _websocket_credentials(offered: Sequence[str], headers: http_io.Headers) -> str | None:
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
