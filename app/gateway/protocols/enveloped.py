"""The flow of an RPC whose messages travel in envelopes: Connect streams, gRPC-Web and native
gRPC streams.

The protocols read request envelopes, answer ``200`` at once with reply envelopes and end with
a frame (in native gRPC, HTTP trailers) that carries the status: only the frames differ, so each
protocol hands this flow an :class:`EnvelopeWire` and the flow runs gate → invoker exactly as the
REST flow does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from typing import Protocol

from google.protobuf.message import Message
from starlette.types import Receive, Scope, Send

from app.gateway import http_io
from app.gateway.codec.envelopes import COMPRESSED, read_envelopes
from app.gateway.codec.wire_codecs import JsonCodec, ProtoCodec, WireCodec
from app.gateway.context import GatewayContext
from app.gateway.errors import BadRequest, GatewayError, method_not_found
from app.gateway.http.decompression import gunzip
from app.gateway.http_io import Ended
from app.gateway.http_rules import BindingPlan
from app.gateway.invoker import Call, Request, admit, stream_ending, until_deadline
from app.gateway.stages import Stages
from app.observe.calls import UNMATCHED, Observation


class EnvelopeWire(Protocol):
    """One protocol's frames for one call."""

    content_type: bytes
    codec: WireCodec
    # The request's compression for flagged envelopes ("" or "identity": none may be flagged).
    request_encoding: str
    # Whether the status goes in HTTP trailers (native gRPC) instead of a last frame.
    trailers: bool

    def request_chunks(self, chunks: AsyncIterator[bytes | str]) -> AsyncIterator[bytes | str]:
        """The body as envelope bytes (gRPC-Web text decodes base64 here)."""
        ...

    def headers(self, context: GatewayContext) -> tuple[tuple[str, str], ...]:
        """Response headers beyond content type and request id."""
        ...

    def message(self, payload: bytes) -> bytes:
        """One reply envelope, as sent."""
        ...

    def end(self, error: GatewayError | None, context: GatewayContext) -> bytes:
        """The final frame: the status and trailing metadata, as sent (empty with trailers)."""
        ...

    def end_trailers(
        self, error: GatewayError | None, context: GatewayContext
    ) -> list[tuple[bytes, bytes]]:
        """The HTTP trailers after the final frame (none but with ``trailers``)."""
        ...


class LastFrameWire:
    """What the protocols that end with a frame in the body (Connect, gRPC-Web) share."""

    trailers = False

    def end_trailers(
        self, error: GatewayError | None, context: GatewayContext
    ) -> list[tuple[bytes, bytes]]:
        return []


class ProtocolFlow:
    """What every RPC protocol's flow (Connect, gRPC-Web, native gRPC) shares: the stages and
    codecs it serves with, and the call's telemetry around whatever its :meth:`serve` does."""

    protocol = ""  # its calls' transport, as telemetry names it

    def __init__(self, stages: Stages, proto: ProtoCodec, json_codec: JsonCodec) -> None:
        self.stages = stages
        self.proto = proto
        self.json = json_codec

    async def __call__(
        self,
        plan: BindingPlan,
        scope: Scope,
        headers: http_io.Headers,
        receive: Receive,
        send: Send,
    ) -> None:
        """Serve one call; ``headers`` are the request's by name."""
        request_id = http_io.request_id(headers)
        observation = begin_observation(self.stages, self.protocol, plan, headers, request_id)
        await http_io.observed(
            observation, self.serve(plan, scope, headers, observation, receive, send)
        )

    def serve(
        self,
        plan: BindingPlan,
        scope: Scope,
        headers: http_io.Headers,
        observation: Observation,
        receive: Receive,
        send: Send,
    ) -> Awaitable[Ended]:
        """The call in this protocol, answered; how it ended."""
        raise NotImplementedError

    async def refuse(
        self, send: Send, error: GatewayError, request_id: str, headers: http_io.Headers
    ) -> tuple[str, int]:
        """Answer a call refused before it began with ``error``; its code and HTTP status."""
        raise NotImplementedError

    async def unmatched(self, path: str, headers: http_io.Headers, send: Send) -> None:
        """A call of a method nobody serves: UNIMPLEMENTED, as a grpc server answers it,
        counted as unmatched."""
        observation = self.stages.options.telemetry.rpc(self.protocol, UNMATCHED).begin()
        error, request_id = method_not_found(path), http_io.request_id(headers)
        refused = await self.refuse(send, error, request_id, headers)
        observation.end(*refused)


async def serve_enveloped(
    stages: Stages, plan: BindingPlan, call: Call, wire: EnvelopeWire, receive: Receive, send: Send
) -> Ended:
    """Run the call; a disconnect cancels it (and this flow) without an answer. How it ended:
    every answer is a ``200`` whose last frame carries the code."""
    return await http_io.run_call(_run(stages, plan, call, wire, receive, send))


async def _run(
    stages: Stages, plan: BindingPlan, call: Call, wire: EnvelopeWire, receive: Receive, send: Send
) -> Ended:
    context = call.context
    streams = stages.options.streams
    started = False
    try:
        stream = streams.enter()  # counted, so a graceful shutdown ends it
    except GatewayError as exc:
        await http_io.start(
            send, 200, wire.content_type, call.request_id, None, trailers=wire.trailers
        )
        await send_end(wire, send, exc, context)
        return exc.code.name, 200
    pump = http_io.pump_cancelling_on_disconnect(receive, context)
    method = call.method

    async def start() -> None:
        nonlocal started
        started = True
        context.headers_sent = True
        extra = wire.headers(context)
        await http_io.start(
            send, 200, wire.content_type, call.request_id, None, extra, trailers=wire.trailers
        )

    error: GatewayError | None = None
    try:
        await admit(call, stages.options.authenticate)
        limit = stages.options.max_body_bytes
        messages = _messages(wire, pump.payloads(), plan, limit)
        request: Request
        if method.client_streaming:
            context.read_from(messages)
            request = messages
        else:
            request = await http_io.only_message(messages, stages.options.body_timeout_seconds)
        if not method.server_streaming:
            reply = await stages.invoker.unary(call, request)
            await start()
            body = wire.message(wire.codec.encode(plan, reply))
            await send({"type": "http.response.body", "body": body, "more_body": True})
        else:
            replies = stages.invoker.stream(call, request)
            async with contextlib.aclosing(replies), until_deadline(context):
                async for reply in replies:
                    if not started:
                        await start()
                    body = wire.message(wire.codec.encode(plan, reply))
                    await send({"type": "http.response.body", "body": body, "more_body": True})
            error = context.status_error()
    except (Exception, asyncio.CancelledError) as exc:
        error = stream_ending(call, stages.options, exc)
    finally:
        context.finish()
        pump.stop()
        streams.leave(stream)
    if not started:
        await start()
    await send_end(wire, send, error, context)
    return None if error is None else (error.code.name, 200)


async def send_end(
    wire: EnvelopeWire, send: Send, error: GatewayError | None, context: GatewayContext
) -> None:
    """The call's status: the last frame of the body, then the trailers where the wire has any."""
    await send({"type": "http.response.body", "body": wire.end(error, context)})
    if wire.trailers:
        await send({"type": "http.response.trailers", "headers": wire.end_trailers(error, context)})


async def _messages(
    wire: EnvelopeWire, chunks: AsyncIterator[bytes | str], plan: BindingPlan, limit: int
) -> AsyncIterator[Message]:
    """Request messages from the body's envelopes, decoded as they arrive."""
    number = 0
    async for flags, payload in read_envelopes(wire.request_chunks(chunks), limit):
        number += 1
        if flags & ~COMPRESSED:
            raise BadRequest(f"request envelope {number} has unknown flags {flags:#04x}")
        if flags & COMPRESSED:
            if wire.request_encoding != "gzip":
                raise BadRequest(
                    f"request envelope {number} is compressed, but the request names "
                    f"no compression it may use ({wire.request_encoding or 'none'})"
                )
            payload = gunzip(payload, limit)
        yield wire.codec.decode(payload, plan.method, f"request message {number}")


def begin_observation(
    stages: Stages, protocol: str, plan: BindingPlan, headers: http_io.Headers, request_id: str
) -> Observation:
    """The call's telemetry, begun as the REST flow begins its own (continuing a caller's
    trace)."""
    streaming = plan.method.kind != "unary"
    return stages.options.telemetry.rpc(protocol, plan.method.full_name, streaming).begin(
        request_id, *http_io.trace_context(headers)
    )
