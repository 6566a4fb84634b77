"""The REST flow of every RPC: match → gate → bind → invoke → render, unary and streaming.

Per-request work is a trie lookup, JSON ↔ message conversion and the invoker's call; everything
per method (plans, bound servicer methods) is computed once.
"""

from __future__ import annotations

import asyncio
import contextlib

from google.protobuf.message import Message
from starlette.types import Receive, Scope, Send

from app.calls import stream_position
from app.gateway import http_io
from app.gateway.codec import streaming
from app.gateway.errors import GatewayError, method_not_allowed, not_found
from app.gateway.http import decompression
from app.gateway.http.stream_response import StreamResponse
from app.gateway.http_io import Ended
from app.gateway.http_rules import MethodNotAllowed, NoRoute, RouteMatch
from app.gateway.invoker import (
    Call,
    Request,
    admit,
    grace_ended,
    new_call,
    stream_ending,
    unary_reply,
    unexpected_failure,
    until_deadline,
)
from app.gateway.stages import Stages
from app.observe.calls import UNMATCHED, Observation

# A REST reply ends its line, as curl users expect of a JSON answer (no prompt glued to it).
NEWLINE = b"\n"


class RpcDispatcher:
    """ASGI app for HTTP requests to the RPC bindings of the stages' route table."""

    def __init__(self, stages: Stages) -> None:
        self.stages = stages
        self._proto_names = stages.options.json.proto_names
        self._telemetry = stages.options.telemetry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        request_id = http_io.request_id(headers)
        try:
            match = self.stages.routes.match(scope["method"], http_io.raw_path(scope))
        except NoRoute:
            close = self.stages.routes.close_routes(scope["method"], http_io.raw_path(scope))
            await self._refuse(send, not_found(scope["path"], close), request_id)
            return
        except MethodNotAllowed as exc:
            error = method_not_allowed(scope["method"], scope["path"], exc.allow)
            await self._refuse(send, error, request_id)
            return
        method = match.plan.method
        observation = self._telemetry.rpc("rest", method.full_name, method.kind != "unary").begin(
            request_id, *http_io.trace_context(headers)
        )
        flow = self._flow(match, headers, request_id, scope, receive, send, observation)
        await http_io.observed(observation, flow)

    async def _flow(
        self,
        match: RouteMatch,
        headers: http_io.Headers,
        request_id: str,
        scope: Scope,
        receive: Receive,
        send: Send,
        observation: Observation,
    ) -> Ended:
        try:
            call = new_call(match.plan.method, headers, request_id, scope, observation)
        except GatewayError as exc:
            await http_io.send_error(send, exc, request_id, self._proto_names)
            return exc.code.name, exc.http_status
        if match.plan.method.kind == "unary":
            return await self._unary(call, match, scope, receive, send)
        return await http_io.run_call(self._stream_call(call, match, scope, send, receive))

    async def _refuse(self, send: Send, error: GatewayError, request_id: str) -> None:
        """Answer a request no RPC binding matches (counted under ``rpc="unmatched"``)."""
        observation = self._telemetry.rpc("rest", UNMATCHED).begin(request_id)
        try:
            await http_io.send_error(send, error, request_id, self._proto_names)
        finally:
            observation.end(error.code.name, error.http_status)

    async def _unary(
        self, call: Call, match: RouteMatch, scope: Scope, receive: Receive, send: Send
    ) -> Ended:
        context = call.context
        try:
            # Who is calling is settled first: an anonymous caller learns nothing from its input.
            await admit(call, self.stages.options.authenticate)
            body = b""
            if match.plan.body:
                http_io.check_content_type(call.headers, b"application/json")
                coding = decompression.request_coding(call.headers)
                options = self.stages.options
                limit = options.max_body_bytes
                body = await http_io.read_body(
                    receive, call.headers, limit, options.body_timeout_seconds
                )
                if coding is not None:
                    body = decompression.decoded(coding, body, limit)
            request = self._request(match, scope, body)
            watch = self.stages.options.cancel_unary_on_disconnect
            reply = await unary_reply(self.stages.invoker, call, request, scope, watch)
        except GatewayError as exc:
            error = exc
        except asyncio.CancelledError as cancelled:
            error = grace_ended(self.stages.options.streams, context, cancelled)
        except Exception as exc:  # a hook's (the gate's, the idempotency keeper's)
            error = unexpected_failure(call, exc, self.stages.options.known_errors)
        else:
            payload = self.stages.transcoder.reply_json(match.plan, reply) + NEWLINE
            return await http_io.send_reply(send, call.headers, payload, call.request_id, context)
        await http_io.send_error(send, error, call.request_id, self._proto_names, context)
        return error.code.name, error.http_status

    def _request(self, match: RouteMatch, scope: Scope, body: bytes) -> Message:
        query = scope.get("query_string", b"")
        return self.stages.transcoder.request(match.plan, match.path_values, query, body)

    async def _stream_call(
        self,
        call: Call,
        match: RouteMatch,
        scope: Scope,
        send: Send,
        receive: Receive,
    ) -> Ended:
        context = call.context
        options = self.stages.options
        streams = options.streams
        try:
            stream = streams.enter()
        except GatewayError as exc:
            await http_io.send_error(send, exc, call.request_id, options.json.proto_names)
            return exc.code.name, exc.http_status
        pump = http_io.pump_cancelling_on_disconnect(receive, context)
        method = call.method
        limit = options.max_body_bytes
        framing = streaming.framing_for(call.headers.get(b"accept", b"").decode("latin-1"))
        coding = call.headers.get(b"accept-encoding")
        response = StreamResponse(send, framing, call.request_id, context, stream, coding)
        try:
            await admit(call, options.authenticate)
            if method.client_streaming:
                http_io.check_content_type(
                    call.headers, b"application/x-ndjson", b"application/json"
                )
                coding = decompression.request_coding(call.headers)
                chunks = pump.payloads()
                if coding is not None:  # decoded as it comes: each line within the limit
                    chunks = decompression.decoded_chunks(coding, chunks)
                messages = streaming.ndjson_messages(chunks, method.input_type, options.json, limit)
                context.read_from(messages)
                request: Request = messages
            else:
                if match.plan.body:
                    http_io.check_content_type(call.headers, b"application/json")
                coding = decompression.request_coding(call.headers)
                http_io.check_length(call.headers, limit)
                body = await pump.read_body(limit, options.body_timeout_seconds)
                if coding is not None:
                    body = decompression.decoded(coding, body, limit)
                request = self._request(match, scope, body)
            if not method.server_streaming:
                reply = await self.stages.invoker.unary(call, request)
                payload = self.stages.transcoder.reply_json(match.plan, reply) + NEWLINE
                return await http_io.send_reply(
                    send, call.headers, payload, call.request_id, context
                )
            _resume_from_last_event(call.headers)
            replies = self.stages.invoker.stream(call, request)  # UNIMPLEMENTED before the 200
            response.open()
            if_none_match = call.headers.get(b"if-none-match")
            async with contextlib.aclosing(replies), until_deadline(context):
                async for reply in replies:
                    if if_none_match is not None and await response.not_modified(if_none_match):
                        break  # the servicer's ETag, given before its first reply, still holds
                    rendered = self.stages.transcoder.reply_json(match.plan, reply, streamed=True)
                    await response.frame(rendered, stream_position.last_event())
                else:
                    if if_none_match is not None:
                        await response.not_modified(if_none_match)  # an unchanged empty list
            error = context.status_error()
        except (Exception, asyncio.CancelledError) as exc:
            error = stream_ending(call, options, exc)
        finally:
            context.finish()
            pump.stop()
            response.stop()
            streams.leave(stream)
        status = await response.finish(error, options.json)
        # A stream that failed after its 200 went out ends with its code under that 200.
        if error is None:
            return None if status == 200 else http_io.NOT_MODIFIED
        return error.code.name, status


def _resume_from_last_event(headers: http_io.Headers) -> None:
    """A reconnecting EventSource sends the last ``id:`` it saw: watches resume after it."""
    given = headers.get(b"last-event-id", b"")
    if given.isdigit() and len(given) < 20:
        stream_position.resume_after(int(given))
