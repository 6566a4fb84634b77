"""(p1)-(p3): what ``portico proxy`` adds to a unary call (tests/bench/proxy_load.py), measured
once, in the run with one worker: the proxy is a process of its own."""

from __future__ import annotations

from typing import Any

from tests.bench import proxy_load
from tests.bench.cases import Bench, Case
from tests.bench.wrk import CONNECTIONS


def proxy(bench: Bench) -> dict[str, Any]:
    result = proxy_load.measure(bench.processes, bench.seconds, CONNECTIONS)
    return result | {"errors": result["p2_proxy_rest"]["errors"]}


def describe(r: dict[str, Any]) -> str:
    p1, p2 = r["p1_direct_grpc"], r["p2_proxy_rest"]
    return (
        f"(p1) gRPC Say straight to the {r['upstream']} upstream: {p1['rps']:,.0f} req/s, p50 "
        f"{p1['p50_ms']:.2f} ms, p99 {p1['p99_ms']:.2f} ms; (p2) GET /v1/say/hello through "
        f"portico proxy: {p2['rps']:,.0f} req/s, p50 {p2['p50_ms']:.2f} ms, p99 "
        f"{p2['p99_ms']:.2f} ms, {p2['errors']:,} errors of {p2['requests']:,}; (p3) the same "
        f"through grpc-gateway: {r['p3_grpc_gateway']}"
    )


CASES = [Case("proxy", "portico proxy", "alone", proxy, describe, workers=1)]
