"""The write path's cases of the benchmark: creates, and background work that keeps up.

    python -m tests.bench.writes [--seconds 5] [--out FILE]

(c) creates: ``POST /api/v1/cluster`` from wrk's 64 connections, each a new cluster, on one
worker (SQLite): rate and p50/p99 latency, the group commit's case.

(h) backlog: 1,000 new clusters stored before the server starts (as a new leader finds the
clusters its predecessor left), on a server whose simulated clock steps every 10 ms, so a
cluster needs almost no simulated time to come up and the time until every one is ``RUNNING``
is the reconciler's own work (1,000 pending transitions, several writes each). Meanwhile a
paced reader (``PACED_RATE`` GETs of a stored cluster a second, open loop) measures what the
background work costs requests; the same reader runs again once the backlog is cleared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from google.protobuf import json_format

from app.config import DEFAULT_K8S_VERSIONS
from app.services.kaas.records import CLUSTER, CLUSTER_SPEC, desired_machines, reserve_machines
from app.store import ObjectStore
from gen.cnct.kaas.api import api_pb2

# The module, not its names: run.py imports this one for its hook.
from tests.bench import run as bench
from tests.bench.paced_load import paced_gets

BACKLOG = 1_000
PACED_RATE = 200.0
IDLE_SECONDS = 3.0
BACKLOG_TIMEOUT = 120.0
# Short simulated steps: the backlog case measures the reconciler, not simulated waiting.
BACKLOG_ENV = {"PORTICO_SIM_STEP_SECONDS": "0.01"}


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system) the process ``pid`` used so far: on a shared machine it says
    more about a case's cost than its wall time does."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def creates(server: bench.Server, seconds: int, workers: int) -> dict[str, float]:
    """(c): cluster creates from 64 connections for ``seconds``."""
    template = json.dumps(dict(bench.CLUSTER, name="c%d", k8s_version=bench._k8s_version(server)))
    script = bench.CREATE_LUA.replace("BODY_TEMPLATE", json.dumps(template))
    used = cpu_seconds(server.process.pid)
    result = bench.wrk(
        f"{server.http}/api/v1/cluster", seconds, server.token, bench._load_cpus(workers), script
    )
    # With one worker: the server's CPU per create (a second of it on a free core is its rate).
    result["server_cpu_ms_per_create"] = (
        (cpu_seconds(server.process.pid) - used) * 1000 / max(1.0, result["rps"] * seconds)
    )
    return result


def seed_backlog(data_dir: Path) -> None:
    """Store ``BACKLOG`` new clusters (as CreateCluster does) before the server starts: its
    reconciler begins with all of them pending, as a new leader taking over would."""

    async def seed() -> None:
        url = f"sqlite:///{data_dir / 'portico.db'}"
        async with ObjectStore.open(url) as store:
            await asyncio.gather(*(_store_cluster(store, f"backlog-{n}") for n in range(BACKLOG)))
            await _store_cluster(store, "bench-read")

    asyncio.run(seed())


async def _store_cluster(store: ObjectStore, name: str) -> None:
    spec = json_format.ParseDict(
        dict(bench.CLUSTER, name=name, k8s_version=DEFAULT_K8S_VERSIONS[0]),
        api_pb2.CreateClusterMsg(),
    )
    status = api_pb2.ClusterDetailItem(name=name, status=api_pb2.PROVISIONING)
    async with store.transaction() as tx:
        await tx.create(CLUSTER_SPEC, name, spec)
        await reserve_machines(tx, len(desired_machines(spec)))
        await tx.create(CLUSTER, name, status)


async def backlog(server: bench.Server) -> dict[str, Any]:
    """(h): how long the seeded clusters take to reach RUNNING, and read latency meanwhile."""
    headers = {"authorization": f"Bearer {server.token}"}
    limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
    ready = time.perf_counter()
    used = cpu_seconds(server.process.pid)
    async with httpx.AsyncClient(
        base_url=server.http, headers=headers, limits=limits, timeout=60
    ) as client:
        read_url = f"{server.http}/api/v1/cluster?name=bench-read"
        stop = asyncio.Event()
        reader = asyncio.create_task(paced_gets(client, read_url, PACED_RATE, stop))
        running = 0
        while time.perf_counter() - ready < BACKLOG_TIMEOUT:
            running = await _running(client)
            if running >= BACKLOG:
                break
            await asyncio.sleep(0.1)
        cleared = time.perf_counter()
        cpu = cpu_seconds(server.process.pid) - used
        stop.set()
        during = await reader
        idle = await _paced_for(client, read_url, IDLE_SECONDS)
    return {
        "clusters": BACKLOG,
        "running": running,
        # From the process's start: the reconciler starts before the server answers.
        "clear_seconds": server.start_seconds + cleared - ready,
        # The server's CPU time from its readiness to the last RUNNING (reads served included).
        "server_cpu_seconds": cpu,
        "reads_during": during,
        "reads_idle": idle,
    }


async def _paced_for(client: httpx.AsyncClient, url: str, seconds: float) -> dict[str, float]:
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(seconds, stop.set)
    return await paced_gets(client, url, PACED_RATE, stop)


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
    with tempfile.TemporaryDirectory() as data:
        seed_backlog(Path(data))
        with bench.portico(processes, workers, Path(data), env=BACKLOG_ENV) as server:
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
        f"| {workers} | (h) a backlog of {backlog['clusters']:,} new clusters | "
        f"{backlog['running']:,} RUNNING {backlog['clear_seconds']:.1f} s after the start "
        f"({backlog['server_cpu_seconds']:.1f} s of server CPU) |",
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
            backlog["running"] >= BACKLOG and backlog["clear_seconds"] < 10
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
