"""What the observability tests do to a server: read /metrics as Prometheus does (samples by
name and labels), and call a unary RPC over gRPC."""

from __future__ import annotations

from typing import Any

import grpc
from prometheus_client.parser import text_string_to_metric_families

from app.gateway.registry import Method

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    """Every sample of a scrape, keyed by its name and its labels."""
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample ``name`` with exactly ``labels``; 0 when it was never recorded."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


async def grpc_unary(
    channel: grpc.aio.Channel, method: Method, metadata: tuple[tuple[str, str], ...]
) -> Any:
    """Call ``method`` with an empty request over ``channel``; its reply."""
    call = channel.unary_unary(
        method.grpc_path,
        request_serializer=method.input_type.SerializeToString,
        response_deserializer=method.output_type.FromString,
    )
    return await call(method.input_type(), metadata=metadata)
