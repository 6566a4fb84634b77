"""Traces: one REST call and one gRPC call, continuing the caller's W3C trace, as span trees."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from app.gateway.registry import Registry
from app.observe import tracing
from app.observe.logs import JsonFormatter
from tests.harness import run, running
from tests.observe.probes import grpc_unary

REGISTRY = Registry.from_package("gen")
CLUSTERS = REGISTRY.method("/cnct.kaas.api.Cluster/GetClusterList")
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider)
    try:
        yield exporter
    finally:
        tracing.uninstall()
        provider.shutdown()


def _tree(finished: tuple[ReadableSpan, ...], trace_id: str) -> dict[str, ReadableSpan]:
    """The spans of one trace by name (the first of each name)."""
    found: dict[str, ReadableSpan] = {}
    for span in finished:
        assert span.context is not None
        if format(span.context.trace_id, "032x") == trace_id:
            found.setdefault(span.name, span)
    return found


def _parent_of(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def test_a_rest_call_is_one_trace_of_gateway_servicer_and_store_spans(tmp_path, spans, caplog):
    caplog.set_level(logging.INFO, logger="portico.requests")

    async def scenario() -> None:
        async with running(tmp_path, request_log=True) as server:
            token = await server.login()
            spans.clear()
            reply = await server.http.get(
                "/api/v1/cluster/list",
                headers={"authorization": f"Bearer {token}", "traceparent": TRACEPARENT},
            )
            assert reply.status_code == 200

    run(scenario())
    tree = _tree(spans.get_finished_spans(), CALLER_TRACE)
    rpc = CLUSTERS.full_name
    gateway, servicer = tree[rpc], tree[f"{rpc} servicer"]
    assert servicer.context is not None
    store = [
        span
        for span in spans.get_finished_spans()
        if span.name.startswith("store ") and _parent_of(span) == servicer.context.span_id
    ]
    assert gateway.kind is SpanKind.SERVER
    assert _parent_of(gateway) == int(CALLER_SPAN, 16)  # the caller's span, from traceparent
    assert gateway.attributes is not None
    assert gateway.attributes["portico.transport"] == "rest"
    assert gateway.attributes["rpc.grpc.status_code"] == "OK"
    assert gateway.attributes["http.response.status_code"] == 200
    assert gateway.context is not None
    assert _parent_of(servicer) == gateway.context.span_id
    # The servicer's reads are its children (the gate's token checks are the call's own).
    assert [span.name for span in store] == ["store list"]
    # The call's request log line names its trace, so a line leads to the trace and back.
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    assert [line["trace_id"] for line in lines if line.get("rpc") == rpc] == [CALLER_TRACE]


def test_a_grpc_call_continues_the_traceparent_in_its_metadata(tmp_path, spans):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            spans.clear()
            metadata = (("authorization", f"Bearer {token}"), ("traceparent", TRACEPARENT))
            await grpc_unary(server.channel, CLUSTERS, metadata)

    run(scenario())
    tree = _tree(spans.get_finished_spans(), CALLER_TRACE)
    rpc = CLUSTERS.full_name
    server_span, servicer = tree[rpc], tree[f"{rpc} servicer"]
    assert server_span.attributes is not None
    assert server_span.attributes["portico.transport"] == "grpc"
    assert _parent_of(server_span) == int(CALLER_SPAN, 16)
    assert server_span.context is not None
    assert _parent_of(servicer) == server_span.context.span_id
    assert any(name.startswith("store ") for name in tree)


def test_a_refused_call_is_an_error_span(tmp_path, spans):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            spans.clear()
            reply = await server.http.get("/api/v1/cluster/list")
            assert reply.status_code == 401

    run(scenario())
    (call,) = [s for s in spans.get_finished_spans() if s.name == CLUSTERS.full_name]
    assert not call.status.is_ok
    assert call.attributes is not None
    assert call.attributes["rpc.grpc.status_code"] == "UNAUTHENTICATED"


def test_exporting_is_off_unless_the_otel_variables_ask():
    assert not tracing.exporting_configured({})
    assert not tracing.exporting_configured({"OTEL_TRACES_EXPORTER": "none"})
    assert tracing.exporting_configured({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert tracing.exporting_configured({"OTEL_TRACES_EXPORTER": "console"})
    assert not tracing.exporting_configured(
        {"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}
    )
    assert not tracing.configure_from_environment({})
    assert tracing.tracer() is None


def test_an_exporter_portico_lacks_stops_the_start_naming_the_variable():
    with pytest.raises(ValueError, match="OTEL_TRACES_EXPORTER"):
        tracing.configure_from_environment({"OTEL_TRACES_EXPORTER": "otlp,zipkin"})
    assert tracing.tracer() is None


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"),
        ({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "udp"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
    ],
)
def test_an_otlp_protocol_portico_cannot_speak_stops_the_start_naming_the_variable(environ, named):
    with pytest.raises(ValueError, match=named):
        tracing.configure_from_environment({"OTEL_TRACES_EXPORTER": "otlp", **environ})
    assert tracing.tracer() is None


def test_otlp_over_grpc_reaches_a_collector_trace_service(tmp_path, caplog, monkeypatch):
    """``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``: spans arrive at a real OTLP/gRPC receiver (the
    collector's TraceService from opentelemetry-proto), and the start says which protocol."""
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as collector
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as collector_grpc

    received: list[collector.ExportTraceServiceRequest] = []

    class Receiver(collector_grpc.TraceServiceServicer):
        def Export(self, request, context):
            received.append(request)
            return collector.ExportTraceServiceResponse()

    receiver = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    collector_grpc.add_TraceServiceServicer_to_server(Receiver(), receiver)
    port = receiver.add_insecure_port("127.0.0.1:0")
    receiver.start()
    caplog.set_level(logging.INFO, logger="portico")
    try:
        # The exporter reads its endpoint from the process environment, as at a real start.
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
        assert tracing.configure_from_environment()

        async def scenario() -> None:
            async with running(tmp_path) as server:
                token = await server.login()
                reply = await server.http.get(
                    "/api/v1/cluster/list",
                    headers={"authorization": f"Bearer {token}", "traceparent": TRACEPARENT},
                )
                assert reply.status_code == 200

        run(scenario())
        assert tracing.flush(timeout_millis=10_000)  # the batch is sent before the assertions
    finally:
        tracing.shutdown()
        receiver.stop(None)
    assert "exporting spans with otlp (grpc)" in caplog.text
    names = {
        span.name
        for request in received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
        if span.trace_id.hex() == CALLER_TRACE
    }
    assert CLUSTERS.full_name in names
    assert f"{CLUSTERS.full_name} servicer" in names
