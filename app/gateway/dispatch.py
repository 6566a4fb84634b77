"""The REST flow of every RPC: match → gate → bind → invoke → render, unary and streaming.

Per-request work is a trie lookup, JSON ↔ message conversion and the invoker's call; everything
per method (plans, bound servicer methods) is computed once.
"""

from __future__ import annotations

import asyncio

import grpc
from google.protobuf.message import Message
from starlette.types import Receive, Scope, Send

from app import stream_position
from app.gateway import http_io, streaming
from app.gateway.errors import GatewayError, method_not_allowed, not_found
from app.gateway.http_rules import MethodNotAllowed, NoRoute, RouteMatch
from app.gateway.invoker import (
    Call,
    Request,
    admit,
    loop_time,
    new_call,
    stream_failure,
)
from app.gateway.stages import Stages
from app.gateway.stream_response import StreamResponse


class RpcDispatcher:
    """ASGI app for HTTP requests to the RPC bindings of the stages' route table."""

    def __init__(self, stages: Stages) -> None:
        self.stages = stages
        self._proto_names = stages.options.json.proto_names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        request_id = http_io.request_id(headers)
        try:
            match = self.stages.routes.match(scope["method"], http_io.raw_path(scope))
        except NoRoute:
            await http_io.send_error(send, not_found(scope["path"]), request_id, self._proto_names)
            return
        except MethodNotAllowed as exc:
            error = method_not_allowed(scope["method"], scope["path"], exc.allow)
            await http_io.send_error(send, error, request_id, self._proto_names)
            return
        try:
            call = new_call(match.plan.method, headers, request_id, scope)
        except GatewayError as exc:
            await http_io.send_error(send, exc, request_id, self._proto_names)
            return
        if match.plan.method.kind == "unary":
            await self._unary(call, match, scope, receive, send)
        else:
            await self._streaming(call, match, scope, receive, send)

    async def _unary(
        self, call: Call, match: RouteMatch, scope: Scope, receive: Receive, send: Send
    ) -> None:
        context = call.context
        try:
            # Who is calling is settled first: an anonymous caller learns nothing from its input.
            await admit(call, self.stages.options.authenticate)
            body = b""
            if match.plan.body:
                http_io.check_content_type(call.headers, b"application/json")
                options = self.stages.options
                body = await http_io.read_body(
                    receive, call.headers, options.max_body_bytes, options.body_timeout_seconds
                )
            request = self._request(match, scope, body)
            reply = await self.stages.invoker.unary(call, request)
        except GatewayError as exc:
            await http_io.send_error(send, exc, call.request_id, self._proto_names, context)
            return
        payload = self.stages.transcoder.reply_json(match.plan, reply)
        await http_io.send_whole(send, 200, b"application/json", payload, call.request_id, context)

    def _request(self, match: RouteMatch, scope: Scope, body: bytes) -> Message:
        query = scope.get("query_string", b"")
        return self.stages.transcoder.request(match.plan, match.path_values, query, body)

    async def _streaming(
        self, call: Call, match: RouteMatch, scope: Scope, receive: Receive, send: Send
    ) -> None:
        worker = asyncio.ensure_future(self._stream_call(call, match, scope, send, receive))
        try:
            await worker
        except asyncio.CancelledError:
            if not worker.cancelled():
                raise  # we were cancelled ourselves, not by a disconnect

    async def _stream_call(
        self,
        call: Call,
        match: RouteMatch,
        scope: Scope,
        send: Send,
        receive: Receive,
    ) -> None:
        context = call.context
        options = self.stages.options
        streams = options.streams
        try:
            stream = streams.enter()
        except GatewayError as exc:
            await http_io.send_error(send, exc, call.request_id, options.json.proto_names)
            return
        pump = http_io.pump_cancelling_on_disconnect(receive, context)
        method = call.method
        limit = options.max_body_bytes
        framing = streaming.framing_for(call.headers.get(b"accept", b"").decode("latin-1"))
        response = StreamResponse(send, framing, call.request_id, context, stream)
        try:
            await admit(call, options.authenticate)
            if method.client_streaming:
                http_io.check_content_type(
                    call.headers, b"application/x-ndjson", b"application/json"
                )
                messages = streaming.ndjson_messages(
                    pump.payloads(), method.input_type, options.json, limit
                )
                context.read_from(messages)
                request: Request = messages
            else:
                if match.plan.body:
                    http_io.check_content_type(call.headers, b"application/json")
                http_io.check_length(call.headers, limit)
                body = await pump.read_body(limit, options.body_timeout_seconds)
                request = self._request(match, scope, body)
            if not method.server_streaming:
                reply = await self.stages.invoker.unary(call, request)
                payload = self.stages.transcoder.reply_json(match.plan, reply)
                await http_io.send_whole(
                    send, 200, b"application/json", payload, call.request_id, context
                )
                return
            _resume_from_last_event(call.headers)
            replies = self.stages.invoker.stream(call, request)
            response.open()
            async with asyncio.timeout_at(
                None if context.deadline is None else loop_time(context.deadline)
            ):
                async for reply in replies:
                    rendered = self.stages.transcoder.reply_json(match.plan, reply, streamed=True)
                    await response.frame(rendered, stream_position.last_event())
            error = context.status_error()
        except GatewayError as exc:
            error = exc
        except TimeoutError:
            context.cancel()
            error = GatewayError(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded")
        except (Exception, asyncio.CancelledError) as exc:
            error = stream_failure(call, streams, exc)
        finally:
            context.finish()
            pump.stop()
            response.stop()
            streams.leave(stream)
        await response.finish(error, options.json)


def _resume_from_last_event(headers: http_io.Headers) -> None:
    """A reconnecting EventSource sends the last ``id:`` it saw: watches resume after it."""
    given = headers.get(b"last-event-id", b"")
    if given.isdigit() and len(given) < 20:
        stream_position.resume_after(int(given))
