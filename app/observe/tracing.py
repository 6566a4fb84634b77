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
_provider: trace.TracerProvider | None = None


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


# OTLP's transports (the ``OTEL_EXPORTER_OTLP_PROTOCOL`` values) this process can speak: the
# standard exporter packages offer protobuf over gRPC and over HTTP (not JSON over HTTP).
OTLP_PROTOCOLS = ("grpc", "http/protobuf")


def otlp_protocol(environ: Mapping[str, str]) -> str:
    """The OTLP transport the environment asks for.

    The traces-only variable wins over the general one, as the OTel specification says; the
    default is ``http/protobuf``. A value no exporter here can honour is refused, naming the
    variable, rather than exporting over another transport than the one asked for.
    """
    for variable in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = environ.get(variable, "").strip().lower()
        if value:
            if value not in OTLP_PROTOCOLS:
                raise ValueError(f"{variable}: {value!r} is not {' or '.join(OTLP_PROTOCOLS)}")
            return value
    return "http/protobuf"


def configure_from_environment(environ: Mapping[str, str] | None = None) -> bool:
    """Export traces as the ``OTEL_*`` variables say (OTLP over HTTP or gRPC, or the console);
    returns whether tracing is on. The exporter reads its endpoint, headers and timeout itself."""
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
    protocol = otlp_protocol(environ) if "otlp" in names else ""
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
        elif protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcExporter,
            )

            exporter = GrpcExporter()
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))
    install(provider)
    described = [f"otlp ({protocol})" if name == "otlp" else name for name in names]
    log.info("tracing on: exporting spans with %s", ", ".join(described))
    return True


def install(provider: trace.TracerProvider) -> None:
    """Trace with ``provider`` from now on (tests pass one with an in-memory exporter)."""
    global _tracer, _provider
    _tracer = provider.get_tracer(INSTRUMENTATION)
    _provider = provider


def flush(timeout_millis: int = 30_000) -> bool:
    """Send the spans the exporters still hold; whether they went within the timeout."""
    force_flush = getattr(_provider, "force_flush", None)
    return True if force_flush is None else bool(force_flush(timeout_millis))


def shutdown() -> None:
    """Send what is held and stop the exporters' threads, then stop tracing."""
    stop = getattr(_provider, "shutdown", None)
    if stop is not None:
        stop()
    uninstall()


def uninstall() -> None:
    """Stop tracing (tests)."""
    global _tracer, _provider
    _tracer = None
    _provider = None


def context_from(carrier: Mapping[str, str]) -> Context:
    """The caller's trace context from its ``traceparent`` and ``tracestate`` (W3C)."""
    return propagate.extract(carrier)
