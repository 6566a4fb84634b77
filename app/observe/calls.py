"""What a transport records of each call: metrics, the call's span, and its request log line.

A transport asks :meth:`Telemetry.rpc` for the :class:`RpcTelemetry` of a method once per call
(a dict lookup) and brackets the call with :meth:`RpcTelemetry.begin` and
:meth:`Observation.end`. Everything per method (label children, names) is bound the first time;
what is off costs a branch.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncGenerator
from contextvars import ContextVar, Token
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from app.observe import loop_counters, metrics, tracing
from app.observe.loop_counters import LocalCounter

UNMATCHED = "unmatched"  # the rpc label of HTTP requests no binding matched

request_log = logging.getLogger("portico.requests")
_current: ContextVar[Observation | None] = ContextVar("portico_observation", default=None)

T = TypeVar("T")


class Telemetry:
    """What both transports record; ``main`` builds one from the settings."""

    def __init__(self, *, metrics: bool = False, request_log: bool = False) -> None:
        self.metrics = metrics
        self.request_log = request_log
        self._rpcs: dict[tuple[str, str], RpcTelemetry] = {}

    def rpc(self, transport: str, rpc: str, streaming: bool = False) -> RpcTelemetry:
        """The recorder of ``rpc`` (a full method name) on ``transport``, bound once."""
        found = self._rpcs.get((transport, rpc))
        if found is None:
            found = self._rpcs[(transport, rpc)] = RpcTelemetry(self, transport, rpc, streaming)
        return found


class RpcTelemetry:
    """The metric children and names of one RPC on one transport."""

    def __init__(self, telemetry: Telemetry, transport: str, rpc: str, streaming: bool) -> None:
        self.transport = transport
        self.rpc = rpc
        self.log_requests = telemetry.request_log
        self.metrics = telemetry.metrics
        self._counts: dict[tuple[str, int], LocalCounter] = {}
        self.seconds = (
            loop_counters.histogram(metrics.REQUEST_SECONDS.labels(transport, rpc))
            if self.metrics
            else None
        )
        self.open_streams = (
            metrics.OPEN_STREAMS.labels(transport, rpc) if self.metrics and streaming else None
        )
        self.messages = (
            loop_counters.counter(metrics.STREAM_MESSAGES.labels(transport, rpc))
            if self.metrics and streaming
            else None
        )

    def begin(
        self, request_id: str = "", traceparent: str | None = None, tracestate: str | None = None
    ) -> Observation:
        """A call starts now; ``traceparent`` continues the caller's trace (W3C)."""
        observation = Observation(self, request_id)
        tracer = tracing.tracer()
        if tracer is not None:
            parent = None
            if traceparent:
                carrier = {"traceparent": traceparent}
                if tracestate:
                    carrier["tracestate"] = tracestate
                parent = tracing.context_from(carrier)
            span = tracer.start_span(
                self.rpc,
                context=parent,
                kind=SpanKind.SERVER,
                attributes={
                    "rpc.system": "grpc",
                    "rpc.method": self.rpc,
                    "portico.transport": self.transport,
                },
            )
            observation.span = span
            observation.token = otel_context.attach(trace.set_span_in_context(span))
        if self.log_requests:
            observation.log_token = _current.set(observation)
        if self.open_streams is not None:
            self.open_streams.inc()
        return observation

    def count(self, code: str, http_status: int) -> LocalCounter:
        """The counter of calls that ended with ``code`` and ``http_status``, bound once."""
        key = (code, http_status)
        counter = self._counts.get(key)
        if counter is None:
            status = str(http_status) if http_status else ""
            counter = self._counts[key] = loop_counters.counter(
                metrics.REQUESTS.labels(self.transport, self.rpc, code, status)
            )
        return counter


class Observation:
    """One call being observed; :meth:`end` records it exactly once."""

    __slots__ = (
        "issuer", "log_token", "request_id", "rpc", "span", "started", "token", "user",
    )  # fmt: skip

    def __init__(self, rpc: RpcTelemetry, request_id: str) -> None:
        self.rpc = rpc
        self.request_id = request_id
        self.started = time.perf_counter()
        self.span: Span | None = None
        self.token: object = None
        self.log_token: Token[Observation | None] | None = None
        self.user = ""
        self.issuer = ""

    def servicer_span(self) -> Any:
        """A span around the servicer's work, the child of the call's (a no-op when off)."""
        tracer = tracing.tracer()
        if tracer is None or self.span is None:
            return _NO_SPAN
        return tracer.start_as_current_span(f"{self.rpc.rpc} servicer")

    def replies(self, replies: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
        """``replies`` counted as sent, each produced inside the servicer's span."""
        rpc = self.rpc
        if rpc.messages is None and self.span is None:
            return replies
        return _observed_replies(self, replies)

    def end(self, code: str, http_status: int = 0) -> None:
        """The call ended with gRPC ``code`` (a name, e.g. ``NOT_FOUND``) and, over HTTP,
        ``http_status``."""
        rpc = self.rpc
        seconds = time.perf_counter() - self.started
        if rpc.seconds is not None:
            rpc.count(code, http_status).pending += 1
            rpc.seconds.observe(seconds)
            if rpc.open_streams is not None:
                rpc.open_streams.dec()
        span = self.span
        if span is not None:
            span.set_attribute("rpc.grpc.status_code", code)
            if http_status:
                span.set_attribute("http.response.status_code", http_status)
            if code != "OK":
                span.set_status(Status(StatusCode.ERROR, code))
            span.end()
            otel_context.detach(self.token)  # type: ignore[arg-type]
        if self.log_token is not None:
            _current.reset(self.log_token)
            _log_request(self, code, http_status, seconds, span)


def note_user(username: str, issuer: str = "") -> None:
    """The gate admitted ``username`` (the subject of ``issuer``'s token, when an identity
    provider vouched for the caller) for the call being observed: its request log line and its
    span say who called."""
    observation = _current.get()
    if observation is not None:
        observation.user = username
        observation.issuer = issuer
        span = observation.span
        if span is not None:
            span.set_attribute("enduser.id", username)
            if issuer:
                span.set_attribute("portico.identity_provider", issuer)


def _log_request(
    observation: Observation, code: str, http_status: int, seconds: float, span: Span | None
) -> None:
    rpc = observation.rpc
    trace_id = ""
    if span is not None:
        trace_id = format(span.get_span_context().trace_id, "032x")
    fields = {
        "request_id": observation.request_id,
        "trace_id": trace_id,
        "transport": rpc.transport,
        "rpc": rpc.rpc,
        "code": code,
        "http_status": http_status or None,
        "duration_ms": round(seconds * 1000, 3),
        "user": observation.user,
    }
    user = observation.user or "-"
    if observation.issuer:
        fields["issuer"] = observation.issuer
        user = f"{user} issuer={observation.issuer}"
    request_log.info(
        "%s %s %s%s %.3f ms user=%s request_id=%s trace_id=%s",
        rpc.transport,
        rpc.rpc,
        code,
        f" {http_status}" if http_status else "",
        seconds * 1000,
        user,
        observation.request_id or "-",
        trace_id or "-",
        extra={"fields": fields},
    )


async def _observed_replies(
    observation: Observation, replies: AsyncGenerator[T, None]
) -> AsyncGenerator[T, None]:
    sent = observation.rpc.messages
    tracer = tracing.tracer()
    span = None
    if tracer is not None and observation.span is not None:
        span = tracer.start_span(f"{observation.rpc.rpc} servicer")
    try:
        while True:
            if span is None:
                try:
                    reply = await anext(replies)
                except StopAsyncIteration:
                    return
            else:
                with trace.use_span(span, end_on_exit=False):
                    try:
                        reply = await anext(replies)
                    except StopAsyncIteration:
                        return
            if sent is not None:
                sent.pending += 1
            yield reply
    finally:
        if span is not None:
            span.end()
        await replies.aclose()


_NO_SPAN = contextlib.nullcontext()
