"""(p1)-(p7): what ``portico proxy`` adds to a unary call (tests/bench/proxy_load.py), beside
grpc-gateway doing the same, under uvicorn and under pyvoy (one worker, then two on two cores),
and the floors of a front that makes the upstream call and nothing else; measured once, in the
run with one worker: the proxy is a process of its own."""

from __future__ import annotations

from typing import Any

from tests.bench import proxy_load
from tests.bench.cases import Bench, Case
from tests.bench.wrk import CONNECTIONS


def proxy(bench: Bench) -> dict[str, Any]:
    result = proxy_load.measure(bench, CONNECTIONS)
    gateway = result["p3_grpc_gateway"]
    gateway_errors = gateway["errors"] if isinstance(gateway, dict) else 0
    proxies = ("p2_proxy_rest", "p4_proxy_pyvoy", "p5_proxy_pyvoy_2_workers")
    proxies += ("p6_floor_grpc_aio", "p7_floor_envoy")
    return result | {"errors": sum(result[key]["errors"] for key in proxies) + gateway_errors}


def _rest(r: dict[str, Any]) -> str:
    return (
        f"{r['rps']:,.0f} req/s, p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms, "
        f"{r['errors']:,} errors of {r['requests']:,}"
    )


def describe(r: dict[str, Any]) -> str:
    p1, p2, p3 = r["p1_direct_grpc"], r["p2_proxy_rest"], r["p3_grpc_gateway"]
    said = (
        f"(p1) gRPC Say straight to the {r['upstream']} upstream: {p1['rps']:,.0f} req/s, p50 "
        f"{p1['p50_ms']:.2f} ms, p99 {p1['p99_ms']:.2f} ms; (p2) GET /v1/say/hello through "
        f"portico proxy: {_rest(p2)}; (p3) the same through grpc-gateway: "
        f"{_rest(p3) if isinstance(p3, dict) else p3}"
    )
    if "p4_proxy_pyvoy" not in r:  # a run from before the pyvoy rows
        return said
    said = (
        f"{said}; (p4) through portico proxy --server pyvoy: {_rest(r['p4_proxy_pyvoy'])}; "
        f"(p5) that with --workers 2 on two cores: {_rest(r['p5_proxy_pyvoy_2_workers'])}"
    )
    if "p6_floor_grpc_aio" not in r:  # a run from before the floors
        return said
    return (
        f"{said}; the floors, the upstream call and nothing else: (p6) through grpc.aio under "
        f"uvicorn: {_rest(r['p6_floor_grpc_aio'])}; (p7) through Envoy's client under pyvoy: "
        f"{_rest(r['p7_floor_envoy'])}"
    )


CASES = [Case("proxy", "portico proxy", "alone", proxy, describe, workers=1)]
