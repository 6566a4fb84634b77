"""OpenTelemetry tracing: off unless the standard ``OTEL_*`` variables ask for an exporter.

A call's span is started by the transport that received it (its ``traceparent``, W3C Trace
Context, continues the caller's trace), the servicer's span by the seam that runs it, and the
store's spans by the store; each is the child of the one before through the context, which the
transports attach for the call's task. While tracing is off nothing here runs on a call: the
seams ask :func:`tracer` once and skip spans when it is None.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Tracer

log = logging.getLogger("portico")

INSTRUMENTATION = "portico"
_tracer: Tracer | None = None


def tracer() -> Tracer | None:
    """The tracer spans are made with, or None while tracing is off."""
    return _tracer


def exporting_configured(environ: Mapping[str, str]) -> bool:
    """Whether the environment asks for traces to be exported (the OTel SDK's variables)."""
    if environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(
        environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def configure_from_environment(environ: Mapping[str, str] | None = None) -> bool:
    """Export traces as the ``OTEL_*`` variables say (OTLP over HTTP, or the console); returns
    whether tracing is on. The exporter reads its endpoint, headers and timeout itself."""
    environ = os.environ if environ is None else environ
    if not exporting_configured(environ):
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SpanExporter,
    )

    names = [n.strip() for n in environ.get("OTEL_TRACES_EXPORTER", "otlp").lower().split(",")]
    for name in names:
        if name not in {"otlp", "console"}:
            raise ValueError(f"OTEL_TRACES_EXPORTER: {name!r} is not otlp, console or none")
    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
    named = environ.get("OTEL_SERVICE_NAME") or "service.name=" in environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    provider = TracerProvider(
        resource=Resource.create({} if named else {"service.name": "portico"})
    )
    for name in names:
        exporter: SpanExporter
        if name == "console":
            exporter = ConsoleSpanExporter()
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))
    install(provider)
    log.info("tracing on: exporting spans with %s", ", ".join(names))
    return True


def install(provider: trace.TracerProvider) -> None:
    """Trace with ``provider`` from now on (tests pass one with an in-memory exporter)."""
    global _tracer
    _tracer = provider.get_tracer(INSTRUMENTATION)


def uninstall() -> None:
    """Stop tracing (tests)."""
    global _tracer
    _tracer = None


def context_from(carrier: Mapping[str, str]) -> Context:
    """The caller's trace context from its ``traceparent`` and ``tracestate`` (W3C)."""
    return propagate.extract(carrier)
