"""Portico's benchmark: one command, a table and a JSON file of results.

    python -m tests.bench.run [--seconds 5] [--workers 1,2] [--only KEYS] [--skip KEYS]
                              [--out FILE] [--docs]

For each worker count it starts ``portico serve`` on fresh SQLite stores (seeded with 1,000 and
with 10,000 clusters, see servers.py) and runs the cases listed below (one module each, in
``cases/``) on loopback, with wrk (Debian's package) and Python load generators that count what
they sent, what came back and every error. With one worker the server is pinned to core 0 and the
load generator to core 1. Every process it starts is stopped at the end, whatever happens.
A case is added by writing its module and one line in CASES.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.bench import report
from tests.bench.cases import (
    COLD_OBJECTS,
    WARM_OBJECTS,
    Bench,
    Case,
    backlog,
    compared,
    create,
    grpc_unary,
    one_port,
    provider_token,
    proxy,
    rate_limited,
    read,
    sse,
    version,
)
from tests.bench.procs import Processes, host_loop_seconds, machine, stopped_on_signals
from tests.bench.servers import Server, portico
from tests.bench.wrk import CONNECTIONS

# In the order they run on each server; create last on main: its clusters keep the reconciler
# busy for the rest of that server's life.
CASES: list[Case] = [
    *compared.CASES,
    *version.CASES,
    *rate_limited.CASES,
    *provider_token.CASES,
    *read.CASES,
    *grpc_unary.CASES,
    *one_port.CASES,
    *sse.CASES,
    *create.CASES,
    *backlog.CASES,
    *proxy.CASES,
]
# The servers cases run on, in this order, each started once per worker count.
SERVERS: dict[str, dict[str, Any]] = {
    "main": {"seed": WARM_OBJECTS},
    "cold": {"seed": COLD_OBJECTS},
    "backlog": backlog.SERVER,
    "alone": {},  # no Portico: the case starts what it measures
}
LABELS = {key: label for case in CASES for key, label in case.row_labels()}
DESCRIBE = {case.key: case.describe for case in CASES if case.describe}


def rss_mib(root_pid: int) -> list[float]:
    """Resident memory (MiB) of each Portico server process under ``root_pid``."""
    out = subprocess.run(
        ["ps", "-o", "pid=,rss=,args=", "-g", str(os.getpgid(root_pid))],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    root, workers = [], []
    for line in out.splitlines():
        pid, rss, args = line.split(None, 2)
        # With several workers the parent only supervises; the workers are spawned children
        # (multiprocessing's resource tracker is another child, and no worker).
        if "spawn_main" in args:
            workers.append(int(rss) / 1024)
        elif int(pid) == root_pid:
            root.append(int(rss) / 1024)
    return workers or root


@contextlib.contextmanager
def server_for(processes: Processes, workers: int, on: str) -> Iterator[Server | None]:
    if on == "alone":
        yield None
    else:
        with portico(processes, workers, **SERVERS[on]) as server:
            yield server


def attempt(case: Case, bench: Bench) -> dict[str, Any]:
    """The results of each of the case's rows (with how long it took); a case that fails is
    recorded as failed, in each of them, not left out."""
    started = time.monotonic()
    try:
        result = case.run(bench)
    except Exception as error:  # any failure is a result to report
        failed = {"failed": f"{type(error).__name__}: {error}"[:300], "errors": 1}
        return {key: failed for key, _ in case.row_labels()}
    if case.rows:
        return result  # each row says how long its own turns took
    return {case.key: result | {"took_seconds": time.monotonic() - started}}


def run_for_workers(
    processes: Processes, workers: int, seconds: float, cases: list[Case]
) -> dict[str, Any]:
    """Every chosen case with ``workers`` server processes."""
    results: dict[str, Any] = {}
    notes: dict[str, Any] = {}
    for on in SERVERS:
        chosen = [c for c in cases if c.on == on and c.workers in (None, workers)]
        if not chosen:
            continue
        with server_for(processes, workers, on) as server:
            if server is not None:
                notes.setdefault("version_body", _version_body(server))
            if on == "main" and server is not None:
                results["start_seconds"] = server.start_seconds
            for case in chosen:
                print(f"workers={workers} {case.key} ...", flush=True)
                results |= attempt(case, Bench(processes, workers, seconds, server, notes))
            if on == "main" and server is not None:
                results["rss_mib"] = rss_mib(server.process.pid)
    report.derive(results, workers)
    return results


def _version_body(server: Server) -> bytes:
    reply = httpx.get(f"{server.http}/api/v1/version", headers=server.headers)
    reply.raise_for_status()
    return reply.content


def chosen_cases(only: str, skip: str) -> list[Case]:
    def listed(case: Case, keys: str) -> bool:
        names = [case.key, *(row for row, _ in case.rows)]
        return any(name.startswith(key) for key in keys.split(",") if key for name in names)

    return [c for c in CASES if (not only or listed(c, only)) and not listed(c, skip)]


def readme_with(readme: str, results: dict[str, Any]) -> str:
    """``readme`` with its benchmark section replaced by the one for ``results``."""
    return report.readme_with(readme, results, LABELS, DESCRIBE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5, help="length of each load run (s)")
    parser.add_argument("--workers", default="1,2", help="server worker counts to measure")
    parser.add_argument("--only", default="", help="run only cases whose keys start so (a,b)")
    parser.add_argument("--skip", default="", help="skip cases whose keys start so (sse_1000)")
    parser.add_argument("--out", type=Path, default=Path("bench-results.json"))
    parser.add_argument("--docs", action="store_true", help="also write the table into its page")
    args = parser.parse_args()
    if args.seconds < 1:
        parser.error("--seconds: at least 1")
    if shutil.which("wrk") is None:
        raise SystemExit("the benchmark needs wrk: apt-get install wrk")
    if shutil.which("h2load") is None:
        raise SystemExit("the benchmark needs h2load: apt-get install nghttp2-client")
    cases = chosen_cases(args.only, args.skip)
    started = time.monotonic()
    processes = Processes()
    results: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        "seconds": args.seconds,
        "connections": CONNECTIONS,
        "runs": {},
    }
    loop_before = host_loop_seconds()
    with stopped_on_signals(processes):
        for workers in [int(w) for w in args.workers.split(",")]:
            results["runs"][workers] = run_for_workers(processes, workers, args.seconds, cases)
    results["host_loop_seconds"] = [loop_before, host_loop_seconds()]
    results["duration_seconds"] = time.monotonic() - started
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(report.table(results, LABELS, DESCRIBE))
    print(f"\nresults written to {args.out}")
    if args.docs:
        report.PAGE.write_text(readme_with(report.PAGE.read_text(), results))
        print(f"and into {report.PAGE.name}")


if __name__ == "__main__":
    main()
