"""Observing calls on the gRPC server: handler wrappers around the guarded servicer methods.

:func:`observed` goes around everything a call runs (the gate included), so refusals are
counted and the call's span is the parent of all the call's work; :func:`traced_servicer` goes
around the servicer method alone, for its span.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import grpc

from app.grpc_server.context import caller_request_id
from app.observe.calls import Observation, RpcTelemetry, Telemetry
from app.observe.tracing import tracer


def observed(
    telemetry: Telemetry, full_name: str, server_streaming: bool, handler: Callable[..., Any]
) -> Callable[..., Any]:
    """``handler`` (a guarded method handler) recorded as one call each time it runs."""
    rpc = telemetry.rpc("grpc", full_name, server_streaming)
    if not inspect.isasyncgenfunction(handler):

        async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            observation = _begin(rpc, context)
            try:
                reply = await handler(request, context)
            except BaseException as exc:
                observation.end(_ended_by(context, exc))
                raise
            observation.end(_code(context))
            return reply

        return unary

    async def stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
        observation = _begin(rpc, context)
        try:
            async for reply in observation.replies(handler(request, context)):
                yield reply
        except BaseException as exc:
            observation.end(_ended_by(context, exc))
            raise
        observation.end(_code(context))

    return stream


def traced_servicer(full_name: str, behaviour: Callable[..., Any]) -> Callable[..., Any]:
    """A unary (or ``context.write``-style) servicer method inside a servicer span, the child of
    the call's span (current in the call's task)."""
    if inspect.isasyncgenfunction(behaviour):
        return behaviour  # its span comes from Observation.replies
    name = f"{full_name} servicer"

    async def traced(request: Any, context: grpc.aio.ServicerContext) -> Any:
        spans = tracer()
        if spans is None:
            return await behaviour(request, context)
        with spans.start_as_current_span(name):
            return await behaviour(request, context)

    return traced


def _begin(rpc: RpcTelemetry, context: grpc.aio.ServicerContext) -> Observation:
    if tracer() is None and not rpc.log_requests:
        return rpc.begin()
    metadata = tuple(context.invocation_metadata() or ())
    # The id the reply carries: the caller's, or the one generated for this call.
    request_id, parent, state = caller_request_id(metadata), None, None
    for key, value in metadata:
        if not isinstance(value, str):
            continue
        if key == "traceparent":
            parent = value
        elif key == "tracestate":
            state = value
    return rpc.begin(request_id, parent, state)


def _ended_by(context: grpc.aio.ServicerContext, exc: BaseException) -> str:
    """The code of a call its handler left by raising ``exc``."""
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        return "CANCELLED"  # the client went away (or the server is stopping)
    return _code(context, "UNKNOWN")


def _code(context: grpc.aio.ServicerContext, otherwise: str = "OK") -> str:
    code = context.code()
    if code is None:
        return otherwise
    if isinstance(code, grpc.StatusCode):
        return code.name
    return _BY_NUMBER.get(code, otherwise)


_BY_NUMBER = {status.value[0]: status.name for status in grpc.StatusCode}
