"""The proxy case of the benchmark: what ``portico proxy`` adds to a unary call.

In one run, against the same upstream (the grpc-go Echo server of tests/proxy, or the grpcio
one where Go is missing): (p1) ``Say`` over gRPC straight to the upstream, from a Python
client; (p2) ``GET /v1/say/hello`` through ``portico proxy --auth none`` with wrk; (p3) the
same through grpc-gateway (v1, as Debian packages it: tests/bench/grpc_gateway.py), with the same
wrk settings, or why it could not be built; (p4) the same through ``portico proxy --server
pyvoy`` (its calls through Envoy), and (p5) that with ``--workers 2`` on two cores; (p6) and
(p7) the floors of tests/bench/proxy_floor.py (the upstream call and nothing else, through
grpc.aio under uvicorn and through Envoy's client under pyvoy). (p2)-(p4), (p6) and (p7) have
core 0 and wrk core 1, all of them up at once and measured in turns; (p5) has cores 0 and 1 and
wrk goes where the kernel puts it.

``python -m tests.bench.proxy_load grpc ADDRESS SECONDS CONCURRENCY`` is the gRPC load
generator of (p1): it sends ``SayRequest{text: "hello"}`` as raw bytes, needing no generated code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SAY_PATH = "/portico.echo.v1.Echo/Say"
SAY_HELLO = b"\n\x05hello"  # SayRequest{text: "hello"} on the wire
SAY = "/v1/say/hello"  # the same call through a front, as its google.api.http route has it


async def _caller(call: Any, until: float, out: list[float]) -> None:
    while (start := time.perf_counter()) < until:
        await call(SAY_HELLO)
        out.append(time.perf_counter() - start)


async def grpc_load(address: str, seconds: float, concurrency: int) -> dict[str, float]:
    import grpc

    async with grpc.aio.insecure_channel(address) as channel:
        call = channel.unary_unary(SAY_PATH)  # no serializers: bytes in, bytes out
        await call(SAY_HELLO)  # connect before timing
        latencies: list[float] = []
        started = time.perf_counter()
        until = started + seconds
        await asyncio.gather(*(_caller(call, until, latencies) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "requests": len(latencies),
        "seconds": elapsed,
        "rps": len(latencies) / elapsed,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
    }


def _upstream(processes: Any, port: int, work: Path) -> tuple[Any, str]:
    """The Go Echo server if it can be built here, else the grpcio one."""
    from tests.proxy import processes as echo

    command: list[str]
    if shutil.which("go") and Path("/usr/share/gocode/src/google.golang.org/grpc").is_dir():
        command, kind = [str(echo.go_echo_binary()), "-port", str(port)], "grpc-go"
    else:
        gen = echo.python_gen(work)
        script = str(echo.HERE / "echo_server.py")
        command = [sys.executable, script, "--gen", str(gen), "--port", str(port)]
        kind = "grpcio"
    return processes.start(command, stdout=subprocess.DEVNULL), kind


@dataclass(frozen=True)
class Front:
    """A front to measure: the command that starts it on a free ``port``, the path that answers
    once it is ready, and its environment."""

    command: Callable[[int], list[str]]
    ready: str = "/v1/say/hello"
    env: dict[str, str] | None = None


@contextlib.contextmanager
def _started(processes: Any, front: Front, cpus: str) -> Iterator[str]:
    """``front`` running on ``cpus``; its base URL."""
    from tests.bench.procs import free_port, wait_ready

    port = free_port()
    server = processes.start(
        front.command(port),
        cpus=cpus,
        env=front.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}{front.ready}")
        yield base
    finally:
        processes.stop(server)


def _proxy(address: str, *flags: str) -> Front:
    """``portico proxy --auth none`` in front of ``address``, with ``flags``."""
    return Front(
        lambda port: [sys.executable, "-m", "app", "proxy", "--upstream", address, "--auth",
                      "none", "--http-port", str(port), *flags],
        ready="/readyz",
    )  # fmt: skip


def _floor(address: str, on_pyvoy: bool) -> Front:
    """A floor of ``tests/bench/proxy_floor.py``: (p7) under pyvoy, (p6) under uvicorn."""

    def command(port: int) -> list[str]:
        if on_pyvoy:
            return [sys.executable, "-m", "tests.bench.proxy_floor", str(port)]
        return [sys.executable, "-m", "uvicorn", "tests.bench.proxy_floor:through_grpc_aio",
                "--port", str(port), "--loop", "uvloop", "--http", "httptools",
                "--no-access-log", "--log-level", "warning"]  # fmt: skip

    return Front(command, env={**os.environ, "BENCH_UPSTREAM": address})


def _fronts(address: str) -> tuple[dict[str, Front], dict[str, str]]:
    """The fronts measured in turns on one core, and those that could not run, with why."""
    from tests.bench import grpc_gateway

    fronts = {"p2_proxy_rest": _proxy(address)}
    missing = {}
    try:
        gateway = str(grpc_gateway.binary())
        fronts["p3_grpc_gateway"] = Front(
            lambda port: [gateway, "-upstream", address, "-port", str(port)]
        )
    except grpc_gateway.Unavailable as error:
        missing["p3_grpc_gateway"] = f"not measured: {error}"
    fronts["p4_proxy_pyvoy"] = _proxy(address, "--server", "pyvoy")
    fronts["p6_floor_grpc_aio"] = _floor(address, on_pyvoy=False)
    fronts["p7_floor_envoy"] = _floor(address, on_pyvoy=True)
    return fronts, missing


def measure(bench: Any, connections: int) -> dict[str, Any]:
    """(p1)-(p7) in one run. The fronts with one core have core 0, all of them up at once and
    measured in turns (wrk on core 1), so that their ratios share the machine's quick and slow
    moments; then (p5) on both cores, and (p1) from core 1."""
    from tests.bench import wrk
    from tests.bench.cases import Target
    from tests.bench.procs import free_port

    processes, seconds = bench.processes, bench.seconds
    upstream_port = free_port()
    with tempfile.TemporaryDirectory() as work:
        upstream, kind = _upstream(processes, upstream_port, Path(work))
        try:
            address = f"127.0.0.1:{upstream_port}"
            fronts, missing = _fronts(address)
            with contextlib.ExitStack() as running:
                bases = {
                    key: running.enter_context(_started(processes, front, "0"))
                    for key, front in fronts.items()
                }
                rows = bench.compare({key: Target(base, SAY) for key, base in bases.items()})
            with _started(processes, _proxy(address, "--server", "pyvoy", "--workers", "2"),
                          "0,1") as base:  # fmt: skip
                wrk.measure(f"{base}{SAY}", 1, "", "")  # warm-up
                two_workers = wrk.summary([wrk.measure(f"{base}{SAY}", seconds, "", "")])
            direct = processes.start(
                [sys.executable, "-m", "tests.bench.proxy_load", "grpc", address, str(seconds),
                 str(connections)],
                cpus="1",
                stdout=subprocess.PIPE,
            )  # fmt: skip
            out, _ = direct.communicate(timeout=seconds + 60)
        finally:
            processes.stop(upstream)
    direct_grpc = json.loads(out)
    return {
        "upstream": kind,
        "p1_direct_grpc": direct_grpc,
        **rows,
        **missing,
        "p5_proxy_pyvoy_2_workers": two_workers,
        "proxy_added_p50_ms": rows["p2_proxy_rest"]["p50_ms"] - direct_grpc["p50_ms"],
    }


if __name__ == "__main__":
    _, address, seconds, concurrency = sys.argv[1:5]
    print(json.dumps(asyncio.run(grpc_load(address, float(seconds), int(concurrency)))))
