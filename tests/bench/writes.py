"""The write path's cases of the benchmark: creates, and background work that keeps up.

    python -m tests.bench.writes [--seconds 5] [--out FILE]

(c) creates: ``POST /api/v1/cluster`` from wrk's 64 connections, each a new cluster, on one
worker (SQLite): rate and p50/p99 latency, the group commit's case.

(h) backlog: 1,000 clusters created at once on a server whose simulated clock steps every
10 ms, so a cluster needs almost no simulated time to come up and the time until every one is
``RUNNING`` is the reconciler's own work (1,000 pending transitions, several writes each).
Meanwhile a paced reader (``PACED_RATE`` GETs of a stored cluster a second, open loop) measures
what the background work costs requests; the same reader runs first on the idle server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

# The module, not its names: run.py imports this one for its hook.
from tests.bench import run as bench
from tests.bench.paced_load import paced_gets

BACKLOG = 1_000
BACKLOG_CONCURRENCY = 64
PACED_RATE = 200.0
IDLE_SECONDS = 3.0
BACKLOG_TIMEOUT = 120.0
# Short simulated steps: the backlog case measures the reconciler, not simulated waiting.
BACKLOG_ENV = {"PORTICO_SIM_STEP_SECONDS": "0.01"}


def creates(server: bench.Server, seconds: int, workers: int) -> dict[str, float]:
    """(c): cluster creates from 64 connections for ``seconds``."""
    template = json.dumps(dict(bench.CLUSTER, name="c%d", k8s_version=bench._k8s_version(server)))
    script = bench.CREATE_LUA.replace("BODY_TEMPLATE", json.dumps(template))
    return bench.wrk(
        f"{server.http}/api/v1/cluster", seconds, server.token, bench._load_cpus(workers), script
    )


async def backlog(server: bench.Server) -> dict[str, Any]:
    """(h): how long 1,000 new clusters take to reach RUNNING, and read latency meanwhile."""
    headers = {"authorization": f"Bearer {server.token}"}
    limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
    version = bench._k8s_version(server)
    async with httpx.AsyncClient(
        base_url=server.http, headers=headers, limits=limits, timeout=60
    ) as client:
        body = dict(bench.CLUSTER, name="bench-read", k8s_version=version)
        (await client.post("/api/v1/cluster", json=body)).raise_for_status()
        read_url = f"{server.http}/api/v1/cluster?name=bench-read"
        idle = await _paced_for(client, read_url, IDLE_SECONDS)

        stop = asyncio.Event()
        reader = asyncio.create_task(paced_gets(client, read_url, PACED_RATE, stop))
        started = time.perf_counter()
        failed = await _create_clusters(client, version)
        created = time.perf_counter()
        running = 0
        while time.perf_counter() - created < BACKLOG_TIMEOUT:
            running = await _running(client)
            if running >= BACKLOG - failed:
                break
            await asyncio.sleep(0.1)
        cleared = time.perf_counter()
        stop.set()
        during = await reader
    return {
        "clusters": BACKLOG,
        "create_errors": failed,
        "running": running,
        "create_seconds": created - started,
        "clear_seconds": cleared - created,
        "total_seconds": cleared - started,
        "reads_idle": idle,
        "reads_during": during,
    }


async def _paced_for(client: httpx.AsyncClient, url: str, seconds: float) -> dict[str, float]:
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(seconds, stop.set)
    return await paced_gets(client, url, PACED_RATE, stop)


async def _create_clusters(client: httpx.AsyncClient, version: str) -> int:
    """Create the backlog's clusters from ``BACKLOG_CONCURRENCY`` callers; how many failed."""
    names = iter(range(BACKLOG))
    failed = 0

    async def caller() -> None:
        nonlocal failed
        for n in names:
            body = dict(bench.CLUSTER, name=f"backlog-{n}", k8s_version=version)
            try:
                reply = await client.post("/api/v1/cluster", json=body)
            except httpx.HTTPError:
                failed += 1
                continue
            failed += reply.status_code != 200

    await asyncio.gather(*(caller() for _ in range(BACKLOG_CONCURRENCY)))
    return failed


async def _running(client: httpx.AsyncClient) -> int:
    reply = await client.get("/api/v1/cluster/list")
    reply.raise_for_status()
    return sum(
        1
        for cluster in reply.json().get("clusters", [])
        if cluster["name"].startswith("backlog-") and cluster.get("status") == "RUNNING"
    )


def backlog_case(processes: bench.Processes, workers: int) -> dict[str, Any]:
    """(h) on a fresh server with ``workers`` processes."""
    with (
        tempfile.TemporaryDirectory() as data,
        bench.portico(processes, workers, Path(data), env=BACKLOG_ENV) as server,
    ):
        return asyncio.run(backlog(server))


def run_cases(processes: bench.Processes, seconds: int, workers: int) -> dict[str, Any]:
    """(c) and (h) with ``workers`` server processes, each on a fresh server."""
    results: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory() as data,
        bench.portico(processes, workers, Path(data)) as server,
    ):
        results["c_create"] = creates(server, seconds, workers)
    results["h_backlog"] = backlog_case(processes, workers)
    return results


def table_lines(workers: int, run: dict[str, Any]) -> list[str]:
    """(h)'s rows of the benchmark's measures table."""
    if "h_backlog" not in run:
        return []
    backlog, idle = run["h_backlog"], run["h_backlog"]["reads_idle"]
    during = backlog["reads_during"]
    return [
        f"| {workers} | (h) {backlog['clusters']:,} new clusters to RUNNING | "
        f"{backlog['running']:,} in {backlog['clear_seconds']:.1f} s after the last create "
        f"({backlog['create_seconds']:.1f} s to create them, {backlog['create_errors']} failed) |",
        f"| {workers} | (h) reads meanwhile, {during['rate']:.0f}/s asked | p50 "
        f"{during['p50_ms']:.1f} ms, p99 {during['p99_ms']:.1f} ms, max {during['max_ms']:.1f} "
        f"ms; {during['delivered']:,} of {during['expected']:,} answered, {during['errors']} "
        f"failed ({during['rate_reached']:.0f}/s reached); idle p99 {idle['p99_ms']:.1f} ms |",
    ]


def targets(run: dict[str, Any], workers: int) -> dict[str, bool]:
    """The write path's targets, checked against one worker count's results."""
    met: dict[str, bool] = {}
    if "c_create" in run and workers == 1:
        create = run["c_create"]
        met["(c) creates >= 2,500/s"] = create["rps"] >= 2_500
        met["(c) create p99 < 100 ms"] = create["p99_ms"] < 100
    if "h_backlog" in run:
        backlog = run["h_backlog"]
        met["(h) 1,000-cluster backlog clears in < 10 s"] = (
            backlog["running"] >= BACKLOG - backlog["create_errors"]
            and backlog["clear_seconds"] < 10
        )
        during = backlog["reads_during"]
        met["(h) reads during the backlog: p99 < 50 ms, none lost"] = (
            during["p99_ms"] < 50 and during["delivered"] == during["expected"]
        )
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5, help="length of the create run (s)")
    parser.add_argument("--workers", type=int, default=1, help="server worker processes")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args()
    processes = bench.Processes()
    try:
        results = run_cases(processes, args.seconds, args.workers)
    finally:
        processes.stop_all()
    results["targets"] = targets(results, args.workers)
    text = json.dumps(results, indent=2)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
