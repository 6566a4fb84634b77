"""Portico as several replicas: PostgreSQL, three replicas and HAProxy, measured and failed over.

    python -m tests.scale.run [--seconds 5] [--failover-seconds 20] [--replicas 3]
                              [--database-url URL] [--out FILE] [--docs]

It makes a fresh schema on the PostgreSQL server of ``--database-url`` (default:
``PORTICO_TEST_DATABASE_URL``), stores 10,000 clusters in it, starts the replicas on it and
HAProxy (Debian's package) in front of them for REST (HTTP/1.1) and gRPC (h2c), both
health-checked on ``/readyz``. Through HAProxy it measures with wrk: (b) reads of one stored
cluster and of the 10,000 in random order, and (c) creates with a realistic body; and (d) the gRPC
call of the benchmark over HAProxy's HTTP/2 frontend. Then the failover (failover.py): the leader
SIGKILLed under load. Every process it starts is stopped and the schema dropped at the end, also
on Ctrl-C or a failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

from app.cli.codegen import page_with_section
from tests.bench import wrk
from tests.bench.cases import create, read, sse
from tests.bench.procs import ROOT, Processes, machine, stopped_on_signals
from tests.bench.servers import k8s_version
from tests.postgres import libpq_url
from tests.scale import failover
from tests.scale.cluster import Deployment, deployment

PAGE = ROOT / "docs" / "how-to" / "replicas.md"
OBJECTS = 10_000
INSTANCES = 8  # scheduler instances the failover's watchers see change


def measure(deployed: Deployment, token: str, names: list[str], seconds: float) -> dict[str, Any]:
    """(b), (c) and (d) through HAProxy, each after a one-second warm-up."""

    def load(path: str, script: str = "") -> dict[str, Any]:
        url = f"{deployed.http}{path}"
        wrk.measure(url, 1, token, "", script)
        return wrk.summary([wrk.measure(url, seconds, token, "", script)])

    shuffled = list(names)
    random.Random(read.SEED).shuffle(shuffled)
    lua, _ = create.script(k8s_version(deployed.http, {"authorization": f"Bearer {token}"}))
    results = {
        "b_read": load(read.cluster_path(names[0])),
        "b_read_cold": load(
            read.cluster_path(shuffled[0]),
            wrk.rotate_script([read.cluster_path(n) for n in shuffled]),
        ),
        "c_create": load("/api/v1/cluster", lua),
    }
    grpc = subprocess.run(
        [sys.executable, "-m", "tests.bench.grpc_load", deployed.grpc, token, str(seconds),
         str(wrk.CONNECTIONS)],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=seconds + 60,
    )  # fmt: skip
    results["d_grpc"] = json.loads(grpc.stdout)
    return results


def versions(database_url: str) -> dict[str, str]:
    with psycopg.connect(libpq_url(database_url), connect_timeout=5) as conn:
        postgres = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
    haproxy = subprocess.run(["haproxy", "-v"], capture_output=True, text=True, check=True)
    return {"postgresql": postgres, "haproxy": haproxy.stdout.split()[2]}


LABELS = {
    "b_read": "(b) GET /api/v1/cluster?name=…, one cluster",
    "b_read_cold": f"(b) {OBJECTS:,} clusters in random order",
    "c_create": "(c) POST /api/v1/cluster, realistic body",
    "d_grpc": "(d) gRPC GetVersionInformation over HAProxy's h2c",
}


def table(results: dict[str, Any]) -> str:
    lines = [
        "| case, through HAProxy | req/s | p50 ms | p99 ms | requests | errors |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key, label in LABELS.items():
        r = results["cases"][key]
        lines.append(
            f"| {label} | {r['rps']:,.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} "
            f"| {r['requests']:,} | {r['errors']:,} |"
        )
    served = ", ".join(f"{name} {n:,}" for name, n in results["calls_served"].items())
    lines.append(f"| calls each replica answered in these cases | {served} | | | | |")
    f = results["failover"]
    create_errors = _errors(f["create_attempts_failed"], f["create_errors_last_at_s"])
    read_errors = _errors(f["read_errors"], f["read_errors_last_at_s"])
    watch_errors = ", ".join(f"{n} {k}" for k, n in f["watch_errors"].items()) or "none"
    lines += [
        "",
        "| failover: the leader SIGKILLed under load | value |",
        "| --- | --- |",
        f"| killed, new leader | {f['killed']}, {f['new_leader']} |",
        f"| time to a new leader | {f['seconds_to_new_leader']:.2f} s |",
        f"| HAProxy took replicas out or back (time from the kill) | "
        f"{'; '.join(f['balancer_changes']) or 'none'} |",
        f"| creates acknowledged (200) | {f['creates_acknowledged']:,} |",
        f"| acknowledged creates not readable afterwards | {f['acknowledged_unreadable']} |",
        f"| creates given up after {failover.RETRIES} tries | {f['creates_given_up']} |",
        f"| create attempts failed (retried with the same Idempotency-Key) | {create_errors} |",
        f"| reads, and failed | {f['reads']:,}: {read_errors} |",
        f"| watchers (half SSE, half NDJSON) reconnected | {f['watchers_reconnected']} of "
        f"{f['watchers']} ({watch_errors}) |",
        f"| watchers that got every later change ({f['marker_events_expected_each']} Starts; "
        f"{f['marker_changes_failed']} change calls failed) | {f['watchers_with_every_marker']} "
        f"of {f['watchers']} |",
        f"| SSE watchers with a gap after resuming | {f['sse_watchers_with_a_gap']} |",
    ]
    return "\n".join(lines)


def _errors(counts: dict[str, int], last: float) -> str:
    if not counts:
        return "none"
    listed = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    return f"{listed}; the last {last:.2f} s after the kill"


def section(results: dict[str, Any]) -> str:
    m = results["machine"]
    return (
        f"Run {results['when']} on {m['cpus']} CPUs ({m['processor']}), Linux {m['kernel']}, "
        f"Python {m['python']}, PostgreSQL {results['versions']['postgresql']}, HAProxy "
        f"{results['versions']['haproxy']}: {results['replicas']} replicas of one worker, "
        f"PostgreSQL and HAProxy on the same machine; {results['seconds']} s per case after a "
        f"1 s warm-up, {results['connections']} connections; the failover ran "
        f"{results['failover']['seconds']} s; the whole run took "
        f"{results['duration_seconds']:.0f} s.\n\n{table(results)}\n"
    )


def readme_with(readme: str, results: dict[str, Any]) -> str:
    return page_with_section(readme, "scale-table", section(results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5, help="length of each load run (s)")
    parser.add_argument("--failover-seconds", type=float, default=20)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument(
        "--server", choices=("uvicorn", "pyvoy"), default="uvicorn",
        help="the replicas' HTTP server (under pyvoy, gRPC on the HTTP port too)",
    )  # fmt: skip
    parser.add_argument(
        "--database-url", default=os.environ.get("PORTICO_TEST_DATABASE_URL", ""),
        help="a PostgreSQL server (postgresql://...) where a fresh schema may be made",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("scale-results.json"))
    parser.add_argument("--docs", action="store_true", help="also write the table into its page")
    args = parser.parse_args()
    if args.replicas < 2:
        parser.error("--replicas: at least 2 (one is killed, another must take over)")
    if min(args.seconds, args.failover_seconds) < 1:
        parser.error("--seconds and --failover-seconds: at least 1")
    for tool in ("haproxy", "wrk"):
        if shutil.which(tool) is None:
            raise SystemExit(f"the replica harness needs {tool}: apt-get install {tool}")
    if not args.database_url:
        raise SystemExit("give --database-url or PORTICO_TEST_DATABASE_URL (postgresql://...)")
    started = time.monotonic()
    names = [f"bench-{i:05d}" for i in range(OBJECTS)]
    processes = Processes()
    results: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        "versions": versions(args.database_url),
        "replicas": args.replicas,
        "server": args.server,
        "seconds": args.seconds,
        "connections": wrk.CONNECTIONS,
    }
    with (
        stopped_on_signals(processes),
        deployment(processes, args.database_url, args.replicas, names, args.server) as deployed,
    ):
        token = deployed.token()
        headers = {"authorization": f"Bearer {token}"}
        instances = sse.running_instances(deployed.http, headers, "watched", INSTANCES)
        results["cases"] = measure(deployed, token, names, args.seconds)
        results["calls_served"] = {r.replica.name: r.calls_served() for r in deployed.replicas}
        results["failover"] = asyncio.run(
            failover.failover(deployed, token, names, instances, args.failover_seconds)
        )
    results["duration_seconds"] = time.monotonic() - started
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    print(f"\nresults written to {args.out}")
    if args.docs:
        PAGE.write_text(readme_with(PAGE.read_text(), results))
        print(f"and into {PAGE.name}")


if __name__ == "__main__":
    main()
