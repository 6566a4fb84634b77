"""(i) a backlog: 1,000 new clusters stored before the server starts (as a new leader finds the
clusters its predecessor left), on a server whose simulated clock steps every 10 ms, so a cluster
needs almost no simulated time to come up and the time until every one is ``RUNNING`` is the
reconciler's own work (1,000 pending transitions, several writes each). Meanwhile a paced reader
(``PACED_RATE`` GETs of a stored cluster a second, open loop, on the load generator's core)
measures what the background work costs requests; the same reader runs again once the backlog
is cleared. The case learns that every cluster is ``RUNNING`` by watching one that is not yet
with a point read, listing them all only when that one is: the list of 1,000 renders for
milliseconds on the server's loop, and polling it every tenth of a second made the observer a
share of the load it observed."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import httpx
from google.protobuf import json_format

from app.services.kaas.records import CLUSTER, CLUSTER_SPEC, machine_count, reserve_machines
from app.settings.config import DEFAULT_K8S_VERSIONS
from app.store import ObjectStore
from gen.cnct.kaas.api import api_pb2
from tests.bench.cases import Bench, Case
from tests.bench.paced_load import paced_gets
from tests.bench.procs import frozen_heap, pinned
from tests.bench.servers import CLUSTER_BODY

BACKLOG = 1_000
PACED_RATE = 200.0
IDLE_SECONDS = 3.0
BACKLOG_TIMEOUT = 120.0
READ = "reader"


def seed_backlog(data_dir: Path) -> None:
    """Store ``BACKLOG`` new clusters (as CreateCluster does) before the server starts: its
    reconciler begins with all of them pending, as a new leader taking over would."""

    async def seed() -> None:
        async with ObjectStore.open(f"sqlite:///{data_dir / 'portico.db'}") as store:
            await asyncio.gather(*(_store_cluster(store, f"backlog-{n}") for n in range(BACKLOG)))
            await _store_cluster(store, READ)

    asyncio.run(seed())


# The server the case runs on: seeded with the backlog, its simulated clock quick.
SERVER: dict[str, Any] = {
    "prepare": seed_backlog,
    "env": {"PORTICO_SIM_STEP_SECONDS": "0.01"},
}


async def _store_cluster(store: ObjectStore, name: str) -> None:
    spec = json_format.ParseDict(
        dict(CLUSTER_BODY, name=name, k8s_version=DEFAULT_K8S_VERSIONS[0]),
        api_pb2.CreateClusterMsg(),
    )
    status = api_pb2.ClusterDetailItem(name=name, status=api_pb2.PROVISIONING)
    async with store.transaction() as tx:
        await tx.create(CLUSTER_SPEC, name, spec)
        await reserve_machines(tx, machine_count(spec))
        await tx.create(CLUSTER, name, status)


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system) the process ``pid`` used so far: on a shared machine it says
    more about a case's cost than its wall time does."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def backlog(bench: Bench) -> dict[str, Any]:
    with pinned(bench.load_cpus), frozen_heap():
        return asyncio.run(_backlog(bench))


async def _backlog(bench: Bench) -> dict[str, Any]:
    server = bench.portico
    limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
    ready = time.perf_counter()
    used = cpu_seconds(server.process.pid)
    async with httpx.AsyncClient(
        base_url=server.http, headers=server.headers, limits=limits, timeout=60
    ) as client:
        read_url = f"{server.http}/api/v1/cluster?name={READ}"
        stop = asyncio.Event()
        reader = asyncio.create_task(paced_gets(client, read_url, PACED_RATE, stop))
        running = await _until_running(client, ready + BACKLOG_TIMEOUT)
        cleared = time.perf_counter()
        cpu = cpu_seconds(server.process.pid) - used
        stop.set()
        during = await reader
        idle_stop = asyncio.Event()
        asyncio.get_running_loop().call_later(IDLE_SECONDS, idle_stop.set)
        idle = await paced_gets(client, read_url, PACED_RATE, idle_stop)
    return {
        "clusters": BACKLOG,
        "running": running,
        # From the process's start: the reconciler starts before the server answers.
        "clear_seconds": server.start_seconds + cleared - ready,
        # The server's CPU time from its readiness to the last RUNNING (reads served included).
        "server_cpu_seconds": cpu,
        "reads_during": during,
        "reads_idle": idle,
        "errors": during["errors"] + idle["errors"] + max(0, BACKLOG - running),
    }


async def _until_running(client: httpx.AsyncClient, deadline: float) -> int:
    """How many backlog clusters are RUNNING once every one is (or at ``deadline``)."""
    running, waiting = await _running(client)
    while waiting is not None and time.perf_counter() < deadline:
        await asyncio.sleep(0.1)  # a poll interval: what it waits for is the loop's test
        reply = await client.get(f"/api/v1/cluster?name={waiting}")
        reply.raise_for_status()
        if reply.json()["cluster"].get("status") == "RUNNING":
            running, waiting = await _running(client)
    return running


async def _running(client: httpx.AsyncClient) -> tuple[int, str | None]:
    """How many backlog clusters are RUNNING, and the last (by name) of those not yet."""
    reply = await client.get("/api/v1/cluster/list")
    reply.raise_for_status()
    backlog = [c for c in reply.json().get("clusters", []) if c["name"].startswith("backlog-")]
    waiting = [c["name"] for c in backlog if c.get("status") != "RUNNING"]
    return len(backlog) - len(waiting), max(waiting, default=None)


def describe(r: dict[str, Any]) -> str:
    during, idle = r["reads_during"], r["reads_idle"]
    return (
        f"{r['running']:,} of {r['clusters']:,} RUNNING {r['clear_seconds']:.1f} s after the "
        f"start ({r['server_cpu_seconds']:.1f} s of server CPU); reads meanwhile, "
        f"{during['rate']:.0f}/s asked: p50 {during['p50_ms']:.1f} ms, p99 "
        f"{during['p99_ms']:.1f} ms, {during['delivered']:,} of {during['expected']:,} answered, "
        f"{during['errors']} failed; idle p99 {idle['p99_ms']:.1f} ms"
    )


CASES = [
    Case(
        "i_backlog", "(i) a backlog of 1,000 new clusters", "backlog", backlog, describe, workers=1
    )
]
