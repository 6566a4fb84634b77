"""A closed-loop gRPC load generator: N concurrent callers of one unary RPC for a fixed time.

Run as ``python -m tests.bench.grpc_load ADDRESS TOKEN SECONDS CONCURRENCY``; prints one JSON
object: requests sent, ok (answered OK), errors (by status code), seconds, the rate of OK
replies reached, p50 and p99 latency in milliseconds of the OK ones.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import Counter

import grpc

from gen.cnct.kaas.api import api_pb2
from tests.bench.procs import percentile


async def _caller(
    call: grpc.aio.UnaryUnaryMultiCallable,
    metadata: tuple,
    until: float,
    out: list[float],
    errors: Counter[str],
) -> None:
    request = api_pb2.GetVersionMsg()
    while (start := time.perf_counter()) < until:
        try:
            await call(request, metadata=metadata)
        except grpc.aio.AioRpcError as error:
            errors[error.code().name] += 1
            continue
        out.append(time.perf_counter() - start)


async def load(address: str, token: str, seconds: float, concurrency: int) -> dict[str, float]:
    """Call GetVersionInformation from ``concurrency`` tasks for ``seconds``."""
    metadata = (("authorization", f"Bearer {token}"),)
    async with grpc.aio.insecure_channel(address) as channel:
        call = channel.unary_unary(
            "/cnct.kaas.api.Cluster/GetVersionInformation",
            request_serializer=api_pb2.GetVersionMsg.SerializeToString,
            response_deserializer=api_pb2.GetVersionReply.FromString,
        )
        await call(api_pb2.GetVersionMsg(), metadata=metadata)  # connect before timing
        latencies: list[float] = []
        errors: Counter[str] = Counter()
        started = time.perf_counter()
        until = started + seconds
        await asyncio.gather(
            *(_caller(call, metadata, until, latencies, errors) for _ in range(concurrency))
        )
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "requests": len(latencies) + errors.total(),
        "ok": len(latencies),
        "errors": errors.total(),
        "error_codes": dict(errors),
        "seconds": elapsed,
        "rps": len(latencies) / elapsed,
        "p50_ms": percentile(latencies, 0.5) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
    }


if __name__ == "__main__":
    address, token, seconds, concurrency = sys.argv[1:5]
    print(json.dumps(asyncio.run(load(address, token, float(seconds), int(concurrency)))))
