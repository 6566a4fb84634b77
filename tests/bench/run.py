"""Portico's benchmark: one command, a table and a JSON file of results.

    python -m tests.bench.run [--seconds 5] [--workers 1,2] [--sse 100,1000] [--out FILE]
                              [--readme]

For each worker count it starts ``portico serve`` (SQLite in a temporary folder, a bench
account), logs in, and drives it on loopback with wrk (Debian's package) and two Python load
generators: (a) an authenticated ``GET /api/v1/version`` (no store access), (b) an authenticated
read of a stored cluster, (c) cluster creation, (d) the RPC of (a) over gRPC from a Python
client, (e) a bare Starlette route returning the same bytes, served the same way; (a) and (b)
also on a server started with ``PORTICO_METRICS=false``, for what metrics cost; (f) and (g) the
RPC of (a) over Connect unary with JSON and with binary protobuf. With one
worker the server is pinned to core 0 and the load generator to core 1. It also measures server
start time, RSS per worker after warm-up, and SSE subscribers of ``ListenEvents``: time to first
byte and the delay from a change (ten a second, each delivered to every subscriber) to each
subscriber's copy of its event. Every process it starts is stopped at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from app.codegen import readme_with_section
from tests.bench import proxy_load

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "bench-password"
CONNECTIONS = 64
SSE_CHANGES_PER_SECOND = 10
CLUSTER = {
    "k8s_version": "",  # filled from the server's offer
    "control_plane_nodes": {"count": 1, "instanceType": "standard"},
    "worker_node_pools": [{"name": "workers", "instanceType": "standard", "count": 1}],
}
# wrk.format's own headers would replace those given with -H (the token): extend those instead.
CREATE_LUA = """
counter = 0
wrk.headers["Content-Type"] = "application/json"
request = function()
  counter = counter + 1
  return wrk.format("POST", "/api/v1/cluster", nil, string.format(BODY_TEMPLATE, counter))
end
"""

# Connect unary: a POST of the whole request message (empty here) in the codec's content type.
CONNECT_LUA = """
wrk.method = "POST"
wrk.body = BODY
wrk.headers["Content-Type"] = CONTENT_TYPE
"""
CONNECT_PATH = "/api/cnct.kaas.api.Cluster/GetVersionInformation"


def connect_script(content_type: str, body: str) -> str:
    return CONNECT_LUA.replace("CONTENT_TYPE", json.dumps(content_type)).replace(
        "BODY", json.dumps(body)
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Processes:
    """Every process the benchmark started, stopped for sure at the end."""

    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, args: list[str], *, cpus: str = "", **kwargs: Any) -> subprocess.Popen[bytes]:
        if cpus and shutil.which("taskset"):
            args = ["taskset", "-c", cpus, *args]
        process = subprocess.Popen(args, start_new_session=True, cwd=ROOT, **kwargs)
        self.started.append(process)
        return process

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def stop_all(self) -> None:
        for process in reversed(self.started):
            self.stop(process)


def wait_ready(url: str, timeout: float = 30.0) -> float:
    """Seconds until ``url`` answers 200."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=1).status_code == 200:
                return time.perf_counter() - started
        time.sleep(0.02)
    raise TimeoutError(f"{url} not ready after {timeout}s")


def wrk(url: str, seconds: int, token: str, cpus: str, script: str = "") -> dict[str, float]:
    """Requests per second and p50/p99 latency (ms) of one wrk run."""
    args = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency"]
    args += ["-H", f"Authorization: Bearer {token}"] if token else []
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
        lua.write(script)
    try:
        args += ["-s", lua.name] if script else []
        if cpus and shutil.which("taskset"):
            args = ["taskset", "-c", cpus, *args]
        out = subprocess.run([*args, url], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(lua.name)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        "p50_ms": _ms(re.search(r"50%\s+([\d.]+\w+)", out).group(1)),  # type: ignore[union-attr]
        "p99_ms": _ms(re.search(r"99%\s+([\d.]+\w+)", out).group(1)),  # type: ignore[union-attr]
        "errors": int(errors.group(1)) if errors else 0,
    }


def _ms(text: str) -> float:
    value, unit = re.match(r"([\d.]+)(\w+)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


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


@dataclass
class Server:
    """A running ``portico serve``."""

    process: subprocess.Popen[bytes]
    http: str
    grpc: str
    token: str
    start_seconds: float


@contextlib.contextmanager
def portico(
    processes: Processes, workers: int, data_dir: Path, *, metrics: bool = True
) -> Iterator[Server]:
    http_port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "PORTICO_DATA_DIR": str(data_dir),
        "PORTICO_ADMIN_PASSWORD": PASSWORD,
        "PORTICO_HTTP_PORT": str(http_port),
        "PORTICO_GRPC_PORT": str(grpc_port),
        "PORTICO_WORKERS": str(workers),
        "PORTICO_METRICS": "true" if metrics else "false",
    }
    started = time.perf_counter()
    process = processes.start(
        [sys.executable, "-m", "app", "serve"],
        cpus="0" if workers == 1 else "",
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{http_port}"
    wait_ready(f"{base}/readyz")
    start_seconds = time.perf_counter() - started
    reply = httpx.post(f"{base}/v1/auth:login", json={"username": "admin", "password": PASSWORD})
    reply.raise_for_status()
    try:
        yield Server(process, base, f"127.0.0.1:{grpc_port}", reply.json()["token"], start_seconds)
    finally:
        processes.stop(process)


def baseline(processes: Processes, workers: int, body: bytes, seconds: float) -> dict[str, float]:
    """(e): the bare Starlette route, served by uvicorn like Portico."""
    port = free_port()
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(body)
    env = {**os.environ, "BENCH_BODY_FILE": f.name}
    process = processes.start(
        [sys.executable, "-m", "uvicorn", "tests.bench.baseline:app", "--port", str(port),
         "--workers", str(workers), "--no-access-log", "--log-level", "warning"],
        cpus="0" if workers == 1 else "",
        env=env,
    )  # fmt: skip
    try:
        wait_ready(f"http://127.0.0.1:{port}/api/v1/version")
        wrk(f"http://127.0.0.1:{port}/api/v1/version", 1, "", _load_cpus(workers))  # warm-up
        return wrk(f"http://127.0.0.1:{port}/api/v1/version", seconds, "", _load_cpus(workers))
    finally:
        processes.stop(process)
        os.unlink(f.name)


def _load_cpus(workers: int) -> str:
    return "1" if workers == 1 else ""


def grpc_load(processes: Processes, server: Server, seconds: float, workers: int) -> dict:
    """(d): the same RPC over gRPC from a Python client."""
    process = processes.start(
        [sys.executable, "-m", "tests.bench.grpc_load", server.grpc, server.token,
         str(seconds), str(CONNECTIONS)],
        cpus=_load_cpus(workers),
        stdout=subprocess.PIPE,
    )  # fmt: skip
    out, _ = process.communicate(timeout=seconds + 60)
    return json.loads(out)


def sse(
    processes: Processes, server: Server, subscribers: int, seconds: float, workers: int
) -> dict[str, float]:
    """TTFB and per-event delay of ``subscribers`` SSE subscriptions while instances change."""
    headers = {"authorization": f"Bearer {server.token}"}
    client = httpx.Client(base_url=server.http, headers=headers, timeout=30)
    # Enough instances that each has stopped (one simulated step, 1 s) before it is started again.
    ids = [create_instance(client, f"sse-{subscribers}-{i}") for i in range(12)]
    host, port = server.http.removeprefix("http://").split(":")
    listener = processes.start(
        [sys.executable, "-m", "tests.bench.sse_load", host, port, server.token,
         str(subscribers), str(seconds)],
        cpus=_load_cpus(workers),
        stdout=subprocess.PIPE,
    )  # fmt: skip
    time.sleep(min(3.0, seconds / 3))  # let the subscriptions open before changes start
    changes: dict[tuple[str, str], list[float]] = {}
    # Only Start's event is written by the call itself (POD_PREPARED, on STARTING); a Stop's
    # POD_EXITED comes later, when the simulated runtime reaches STOPPED, so it is not timed.
    toggles = itertools.cycle(
        (instance_id, verb, event)
        for verb, event in (("stop", ""), ("start", "EVENT_TYPE_POD_PREPARED"))
        for instance_id in ids
    )
    until = time.time() + seconds / 2
    while (at := time.time()) < until:
        instance_id, verb, event = next(toggles)
        done = client.post(f"/v1/scheduler/instances/{instance_id}:{verb}", json={}).is_success
        if done and event:
            changes.setdefault((instance_id, event), []).append(at)
        # Paced: SSE_CHANGES_PER_SECOND changes, each one delivered to every subscriber.
        time.sleep(max(0.0, at + 1 / SSE_CHANGES_PER_SECOND - time.time()))
    out, _ = listener.communicate(timeout=seconds + 60)
    client.close()
    result = json.loads(out)
    delays = []
    for pod, kind, arrived in result["arrivals"]:
        made = [t for t in changes.get((pod, kind), ()) if t <= arrived]
        if made:
            delays.append(arrived - max(made))
    ttfb = sorted(result["ttfb_s"])
    delays.sort()
    return {
        "subscribers": len(ttfb),
        "ttfb_p50_ms": _percentile(ttfb, 0.5) * 1000,
        "ttfb_p99_ms": _percentile(ttfb, 0.99) * 1000,
        "events_received": len(delays),
        "event_p50_ms": _percentile(delays, 0.5) * 1000,
        "event_p99_ms": _percentile(delays, 0.99) * 1000,
        "changes_per_second": SSE_CHANGES_PER_SECOND,
    }


def create_instance(client: httpx.Client, name: str) -> str:
    """Create a scheduler instance; its id, from the first status of the Create stream."""
    body = {
        "name": name,
        "type": "CONTAINER",
        "uri": "docker.io/library/nginx:1.27",
        "resource": {"limit": {"cpu": 1, "memory": 64, "disk": 1}},
    }
    with client.stream("POST", "/v1/scheduler/instances", json=body) as reply:
        reply.raise_for_status()
        for line in reply.iter_lines():
            return json.loads(line)["result"]["id"]
    raise RuntimeError("Create sent no status")


def _percentile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(len(values) * q))] if values else float("nan")


def read_cases(server: Server, seconds: int, load: str) -> dict[str, Any]:
    """(a) and (b) against ``server``, after storing the cluster (b) reads and a warm-up."""
    headers = {"authorization": f"Bearer {server.token}"}
    cluster = dict(CLUSTER, name="bench-read", k8s_version=_k8s_version(server))
    httpx.post(f"{server.http}/api/v1/cluster", json=cluster, headers=headers).raise_for_status()
    wrk(f"{server.http}/api/v1/version", 1, server.token, load)  # warm-up
    return {
        "a_version": wrk(f"{server.http}/api/v1/version", seconds, server.token, load),
        "b_read": wrk(f"{server.http}/api/v1/cluster?name=bench-read", seconds, server.token, load),
    }


def run_for_workers(
    processes: Processes, workers: int, seconds: int, sse_counts: list[int]
) -> dict[str, Any]:
    """Every measurement with ``workers`` server processes."""
    load = _load_cpus(workers)
    # (a) and (b) once more on a server recording no metrics: what metrics cost the hot path.
    with (
        tempfile.TemporaryDirectory() as data,
        portico(processes, workers, Path(data), metrics=False) as server,
    ):
        unmetered = read_cases(server, seconds, load)
    with tempfile.TemporaryDirectory() as data, portico(processes, workers, Path(data)) as server:
        headers = {"authorization": f"Bearer {server.token}"}
        version = httpx.get(f"{server.http}/api/v1/version", headers=headers)
        version.raise_for_status()
        results: dict[str, Any] = {"start_seconds": server.start_seconds}
        results.update(read_cases(server, seconds, load))
        connect = f"{server.http}{CONNECT_PATH}"
        for key, content_type, body in (
            ("f_connect_json", "application/json", "{}"),
            ("g_connect_proto", "application/proto", ""),
        ):
            script = connect_script(content_type, body)
            results[key] = wrk(connect, seconds, server.token, load, script)
        results["d_grpc"] = grpc_load(processes, server, seconds, workers)
        results["rss_mib"] = rss_mib(server.process.pid)
        for count in sse_counts:
            results[f"sse_{count}"] = sse(processes, server, count, max(seconds, 6), workers)
        # Last: the clusters it creates keep the reconciler busy for the rest of the run.
        k8s_version = _k8s_version(server)
        template = json.dumps(dict(CLUSTER, name="c%d", k8s_version=k8s_version))
        script = CREATE_LUA.replace("BODY_TEMPLATE", json.dumps(template))
        results["c_create"] = wrk(
            f"{server.http}/api/v1/cluster", seconds, server.token, load, script
        )
    results["a_version_no_metrics"] = unmetered["a_version"]
    results["b_read_no_metrics"] = unmetered["b_read"]
    # The yardstick runs alone, with Portico stopped, on the same cores.
    results["e_starlette"] = baseline(processes, workers, version.content, seconds)
    a, d, e = results["a_version"]["rps"], results["d_grpc"]["rps"], results["e_starlette"]["rps"]
    results["ratio_a_to_e"] = a / e
    results["ratio_a_to_d"] = a / d
    results["metrics_kept_a"] = a / unmetered["a_version"]["rps"]
    results["metrics_kept_b"] = results["b_read"]["rps"] / unmetered["b_read"]["rps"]
    results["targets"] = targets(results, workers)
    return results


def _k8s_version(server: Server) -> str:
    # The cluster manager lists what it offers in its validation error; ask for a bad one.
    reply = httpx.post(
        f"{server.http}/api/v1/cluster",
        json=dict(CLUSTER, name="probe", k8s_version="0.0.0"),
        headers={"authorization": f"Bearer {server.token}"},
    )
    return re.search(r"versions ([\d.]+)", reply.text).group(1)  # type: ignore[union-attr]


def targets(run: dict[str, Any], workers: int) -> dict[str, bool]:
    """The performance targets, checked against one worker count's results."""
    met = {
        "(a) >= 0.8 x (e)": run["ratio_a_to_e"] >= 0.8,
        "(a) >= 2 x (d)": run["ratio_a_to_d"] >= 2,
        "p99 of (a) and (b) < 10 ms": max(run["a_version"]["p99_ms"], run["b_read"]["p99_ms"]) < 10,
        "(g) Connect binary >= (a) REST JSON": run["g_connect_proto"]["rps"]
        >= run["a_version"]["rps"],
    }
    if "metrics_kept_a" in run:
        met["(a), (b) with metrics >= 0.9 x without"] = (
            min(run["metrics_kept_a"], run["metrics_kept_b"]) >= 0.9
        )
    if workers >= 2:
        met["(b) >= 10,000 req/s"] = run["b_read"]["rps"] >= 10_000
    if "sse_1000" in run:
        met["SSE 1000: event p99 < 100 ms"] = run["sse_1000"]["event_p99_ms"] < 100
    return met


def table(results: dict[str, Any]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| workers | case | req/s | p50 ms | p99 ms |",
        "| ---: | --- | ---: | ---: | ---: |",
    ]
    names = {
        "a_version": "(a) GET /api/v1/version",
        "b_read": "(b) GET /api/v1/cluster?name=…",
        "c_create": "(c) POST /api/v1/cluster",
        "d_grpc": "(d) gRPC GetVersionInformation",
        "e_starlette": "(e) bare Starlette route",
        "a_version_no_metrics": "(a) with PORTICO_METRICS=false",
        "b_read_no_metrics": "(b) with PORTICO_METRICS=false",
        "f_connect_json": "(f) Connect unary JSON, RPC of (a)",
        "g_connect_proto": "(g) Connect unary binary, RPC of (a)",
    }
    for workers, run in results["runs"].items():
        for key, name in names.items():
            if key not in run:
                continue  # a case added after the run
            r = run[key]
            failed = f" ({r['errors']} failed)" if r.get("errors") else ""
            lines.append(
                f"| {workers} | {name}{failed} | {r['rps']:,.0f} | {r['p50_ms']:.2f} "
                f"| {r['p99_ms']:.2f} |"
            )
    if "proxy" in results:  # a run with the proxy case (see proxy_load.py)
        lines += proxy_load.table_lines(results["proxy"])
    lines += ["", "| workers | measure | value |", "| ---: | --- | --- |"]
    for workers, run in results["runs"].items():
        for target, met in run["targets"].items():
            lines.append(f"| {workers} | target {target} | {'met' if met else 'NOT MET'} |")
        lines.append(f"| {workers} | (a)/(e) | {run['ratio_a_to_e']:.2f} |")
        lines.append(f"| {workers} | (a)/(d) | {run['ratio_a_to_d']:.2f} |")
        if "metrics_kept_a" in run:
            lines.append(
                f"| {workers} | with metrics / without | (a) {run['metrics_kept_a']:.2f}, "
                f"(b) {run['metrics_kept_b']:.2f} |"
            )
        lines.append(f"| {workers} | start time | {run['start_seconds']:.2f} s |")
        rss = ", ".join(f"{m:.0f}" for m in run["rss_mib"])
        lines.append(f"| {workers} | RSS per worker | {rss} MiB |")
        for key, value in run.items():
            if key.startswith("sse_"):
                lines.append(
                    f"| {workers} | SSE {value['subscribers']} subscribers | TTFB p50 "
                    f"{value['ttfb_p50_ms']:.1f} ms, p99 {value['ttfb_p99_ms']:.1f} ms; event "
                    f"p50 {value['event_p50_ms']:.1f} ms, p99 {value['event_p99_ms']:.1f} ms "
                    f"({value['events_received']} deliveries of "
                    f"{value['changes_per_second']} changes/s) |"
                )
    return "\n".join(lines)


README = ROOT / "README.md"


def readme_with(readme: str, results: dict[str, Any]) -> str:
    """``readme`` with its benchmark table replaced by the one for ``results``."""
    machine = results["machine"]
    section = (
        f"Run {results['when']} on {machine['cpus']} CPUs ({machine['processor']}), Python "
        f"{machine['python']}; {results['seconds']} s per case, {results['connections']} "
        f"connections.\n\n{table(results)}\n"
    )
    return readme_with_section(readme, "bench-table", section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5, help="length of each load run (s)")
    parser.add_argument("--workers", default="1,2", help="server worker counts to measure")
    parser.add_argument("--sse", default="100,1000", help="SSE subscriber counts to measure")
    parser.add_argument("--out", type=Path, default=Path("bench-results.json"))
    parser.add_argument("--readme", action="store_true", help="also write the table into README.md")
    parser.add_argument("--no-proxy", action="store_true", help="skip the portico proxy case")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("the benchmark needs wrk: apt-get install wrk")
    processes = Processes()
    results: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
        },
        "seconds": args.seconds,
        "connections": CONNECTIONS,
        "runs": {},
    }
    try:
        for workers in [int(w) for w in args.workers.split(",")]:
            sse_counts = [int(n) for n in args.sse.split(",") if n]
            results["runs"][workers] = run_for_workers(processes, workers, args.seconds, sse_counts)
        if not args.no_proxy:
            results["proxy"] = proxy_load.measure(processes, args.seconds, CONNECTIONS)
    finally:
        processes.stop_all()
    args.out.write_text(json.dumps(results, indent=2))
    print(table(results))
    print(f"\nresults written to {args.out}")
    if args.readme:
        README.write_text(readme_with(README.read_text(), results))
        print("and into README.md")


if __name__ == "__main__":
    main()
