"""The benchmark's results as Markdown: the load table, the targets and the performance page."""

from __future__ import annotations

from typing import Any

from app.cli.codegen import page_with_section
from tests.bench.cases import TURN_SECONDS
from tests.bench.procs import ROOT

PAGE = ROOT / "docs" / "performance.md"


def derive(run: dict[str, Any], workers: int) -> None:
    """Add the ratios and the targets of item (a)-(g) to one worker count's results."""
    ratios = {
        "(a)/(e) Starlette": ("a_version", "e_starlette"),
        "(a)/(e) raw ASGI": ("a_version", "e_raw_asgi"),
        "(a)/(d) gRPC": ("a_version", "d_grpc"),
        "(g)/(a) with the headers of (g)": ("g_connect_proto", "a_version_headers"),
        "(a) with metrics / without": ("a_version", "a_version_no_metrics"),
        "(b) with metrics / without": ("b_read", "b_read_no_metrics"),
        "(a) 1,000 tokens / one token": ("a_tokens", "a_version"),
        "(b) cold / warm": ("b_read_cold", "b_read"),
        "(c)/(c) floor": ("c_create", "c_floor"),
        "(a) rate limited / not": ("a_version_rate_limited", "a_version_unlimited"),
        "(h) gzipped / plain, req/s": ("h_list_gzip", "h_list"),
        "(h) zstd / plain, req/s": ("h_list_zstd", "h_list"),
        "gRPC unary, one port / grpc.aio port": ("g_unary_one_port", "g_unary_grpc_aio"),
        "gRPC stream, one port / grpc.aio port": ("g_stream_one_port", "g_stream_grpc_aio"),
        "(a) REST, pyvoy / uvicorn": ("a_version_pyvoy", "a_version_uvicorn"),
        "(e) raw ASGI, pyvoy / uvicorn": ("e_raw_pyvoy", "e_raw_uvicorn"),
    }
    run["ratios"] = _ratios(run, ratios)
    plain = run.get("h_list", {})
    for case, coded in (("h_list_gzip", "gzipped"), ("h_list_zstd", "zstd")):
        compressed = run.get(case, {})
        if plain.get("reply_bytes") and compressed.get("reply_bytes"):
            run["ratios"][f"(h) bytes of a reply on the wire, {coded} / plain"] = (
                compressed["reply_bytes"] / plain["reply_bytes"]
            )
    run["ratios"] |= _ratios(run.get("proxy", {}), PROXY_RATIOS)
    run["targets"] = targets(run, workers)


# The proxy case's rows (tests/bench/proxy_load.py) against grpc-gateway's (p3), and (p5)'s two
# workers against (p4)'s one.
PROXY_RATIOS = {
    "(p2) portico proxy / (p3) grpc-gateway": ("p2_proxy_rest", "p3_grpc_gateway"),
    "(p4) portico proxy on pyvoy / (p3) grpc-gateway": ("p4_proxy_pyvoy", "p3_grpc_gateway"),
    "(p5) two workers / (p4) one": ("p5_proxy_pyvoy_2_workers", "p4_proxy_pyvoy"),
    "(p6) floor through grpc.aio / (p3) grpc-gateway": ("p6_floor_grpc_aio", "p3_grpc_gateway"),
    "(p7) floor through Envoy's client / (p3) grpc-gateway": ("p7_floor_envoy", "p3_grpc_gateway"),
}


def _ratios(rows: dict[str, Any], pairs: dict[str, tuple[str, str]]) -> dict[str, float]:
    """Each pair's ratio of req/s, ``top / bottom``, where ``rows`` has both."""
    rps = {key: r["rps"] for key, r in rows.items() if isinstance(r, dict) and r.get("rps")}
    return {
        name: rps[top] / rps[bottom]
        for name, (top, bottom) in pairs.items()
        if top in rps and bottom in rps
    }


def targets(run: dict[str, Any], workers: int) -> dict[str, bool]:
    """The performance targets this run has the cases for, and whether each was met."""
    ratios = run["ratios"]
    met: dict[str, bool] = {}
    if workers == 1 and "(a)/(e) Starlette" in ratios:
        met["(a) >= 1.0 x (e) Starlette, one worker"] = ratios["(a)/(e) Starlette"] >= 1.0
    if "(a)/(d) gRPC" in ratios:
        met["(a) >= 2 x (d)"] = ratios["(a)/(d) gRPC"] >= 2
    if "a_version" in run and "b_read" in run:
        met["p99 of (a) and (b) < 10 ms"] = (
            max(run["a_version"]["p99_ms"], run["b_read"]["p99_ms"]) < 10
        )
    if "g_connect_proto" in run and "a_version" in run:
        met["(g) Connect binary >= (a) REST JSON"] = (
            run["g_connect_proto"]["rps"] >= run["a_version"]["rps"]
        )
    metered = ("(a) with metrics / without", "(b) with metrics / without")
    kept = [ratios[k] for k in metered if k in ratios]
    if len(kept) == 2:
        met["(a), (b) with metrics >= 0.9 x without"] = min(kept) >= 0.9
    if "(a) rate limited / not" in ratios:
        met["(a) with a rate limit it never reaches >= 0.95 x without"] = (
            ratios["(a) rate limited / not"] >= 0.95
        )
    if "gRPC unary, one port / grpc.aio port" in ratios:
        met["gRPC unary on the one port >= 5 x the grpc.aio port"] = (
            ratios["gRPC unary, one port / grpc.aio port"] >= 5
        )
    if "(a) REST, pyvoy / uvicorn" in ratios:
        met["(a) under pyvoy >= 1.0 x under uvicorn"] = ratios["(a) REST, pyvoy / uvicorn"] >= 1.0
    fronts = [ratios[name] for name in list(PROXY_RATIOS)[:2] if name in ratios]
    if fronts:
        met["portico proxy (p2 or p4) >= 0.7 x grpc-gateway"] = max(fronts) >= 0.7
    if "(p5) two workers / (p4) one" in ratios:
        met["portico proxy, 2 workers on 2 cores >= 1.6 x one"] = (
            ratios["(p5) two workers / (p4) one"] >= 1.6
        )
    proxied = run.get("proxy", {})
    gateway = proxied.get("p3_grpc_gateway")
    if isinstance(gateway, dict) and "p2_proxy_rest" in proxied:
        p99 = min(proxied[k]["p99_ms"] for k in ("p2_proxy_rest", "p4_proxy_pyvoy") if k in proxied)
        met["portico proxy (p2 or p4) p99 < 2 x grpc-gateway's"] = p99 < 2 * gateway["p99_ms"]
    cold = run.get("b_read_cold", {})
    if workers >= 2 and "rps" in cold:
        met["cold (b) >= 8,000 req/s, p99 < 10 ms"] = cold["rps"] >= 8000 and cold["p99_ms"] < 10
    sse = run.get("sse_1000", {})
    if "expected" in sse:
        met["SSE 1,000: delivered = expected, event p99 < 100 ms"] = (
            sse["expected"] > 0 and sse["delivered"] == sse["expected"]
            and sse["event_p99_ms"] < 100
        )  # fmt: skip
    create = run.get("c_create", {})
    if workers == 1 and "rps" in create:
        met["(c) creates >= 2,500/s, p99 < 100 ms"] = (
            create["rps"] >= 2500 and create["p99_ms"] < 100
        )
    backlog = run.get("i_backlog", {})
    if "running" in backlog:
        reads = backlog["reads_during"]
        met["(i) 1,000-cluster backlog RUNNING in < 10 s"] = (
            backlog["running"] == backlog["clusters"] and backlog["clear_seconds"] < 10
        )
        met["(i) reads during the backlog: p99 < 50 ms, none lost"] = (
            reads["p99_ms"] < 50 and reads["delivered"] == reads["expected"]
        )
    cases = [r for r in run.values() if isinstance(r, dict) and "errors" in r]
    met["no case had an error"] = all(r["errors"] == 0 and "failed" not in r for r in cases)
    return met


def table(results: dict[str, Any], labels: dict[str, str], describe: dict[str, Any]) -> str:
    """The results as Markdown tables: load cases, then targets, ratios and the rest."""
    lines = [
        "| workers | case | req/s | p50 ms | p99 ms | requests | errors |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for workers, run in results["runs"].items():
        for key, label in labels.items():
            r = run.get(key)
            if r is None or key in describe:
                continue
            if "failed" in r:
                lines.append(f"| {workers} | {label} | FAILED: {r['failed']} | | | | |")
                continue
            lines.append(
                f"| {workers} | {label} | {r['rps']:,.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} "
                f"| {r['requests']:,} | {_errors(r)} |"
            )
    lines += ["", "| workers | measure | value |", "| ---: | --- | --- |"]
    for workers, run in results["runs"].items():
        for target, met in run["targets"].items():
            lines.append(f"| {workers} | target {target} | {'met' if met else 'NOT MET'} |")
        for name, ratio in run["ratios"].items():
            lines.append(f"| {workers} | {name} | {ratio:.2f} |")
        if "start_seconds" in run:
            lines.append(f"| {workers} | start time | {run['start_seconds']:.2f} s |")
        if "rss_mib" in run:
            rss = ", ".join(f"{m:.0f}" for m in run["rss_mib"])
            lines.append(f"| {workers} | RSS per worker after the main cases | {rss} MiB |")
        for key, text in describe.items():
            if key in run:
                r = run[key]
                value = f"FAILED: {r['failed']}" if "failed" in r else text(r)
                lines.append(f"| {workers} | {labels[key]} | {value} |")
    return "\n".join(lines)


def _errors(r: dict[str, Any]) -> str:
    if not r["errors"]:
        return "0"
    parts = [f"{r['non_2xx']:,} non-2xx"] if r.get("non_2xx") else []
    parts += [f"{n:,} {kind}" for kind, n in r.get("socket_errors", {}).items() if n]
    parts += [f"{n:,} {code}" for code, n in r.get("error_codes", {}).items()]
    return f"**{r['errors']:,}** ({', '.join(parts)})"


def section(results: dict[str, Any], labels: dict[str, str], describe: dict[str, Any]) -> str:
    machine = results["machine"]
    speed = ""
    if "host_loop_seconds" in results:
        before, after = results["host_loop_seconds"]
        speed = (
            f"; the host's speed, as a fixed Python loop's time: {before:.2f} s before the run, "
            f"{after:.2f} s after"
        )
    return (
        f"Run {results['when']} on {machine['cpus']} CPUs ({machine['processor']}), Linux "
        f"{machine['kernel']}, Python {machine['python']}; {results['seconds']} s per case after "
        f"a 1 s warm-up (the rows of a target ratio in turns of {TURN_SECONDS} s), "
        f"{results['connections']} connections; the whole run took "
        f"{results['duration_seconds']:.0f} s{speed}.\n\n{table(results, labels, describe)}\n"
    )


def readme_with(
    readme: str, results: dict[str, Any], labels: dict[str, str], describe: dict[str, Any]
) -> str:
    """``readme`` with its benchmark section replaced by the one for ``results``."""
    return page_with_section(readme, "bench-table", section(results, labels, describe))
