"""The proxy case of the benchmark: what ``portico proxy`` adds to a unary call.

In one run, against the same upstream (the grpc-go Echo server of tests/proxy, or the grpcio
one where Go is missing): (p1) ``Say`` over gRPC straight to the upstream, from a Python
client; (p2) ``GET /v1/say/hello`` through ``portico proxy --auth none`` with wrk; (p3) the
same through grpc-gateway (v1, as Debian packages it: tests/bench/grpc_gateway.py), with the same
wrk settings, or why it could not be built; (p4) the same through ``portico proxy --server
pyvoy`` (its calls through Envoy), and (p5) that with ``--workers 2`` on two cores. (p2)-(p4)
have core 0 and wrk core 1; (p5) has cores 0 and 1 and wrk goes where the kernel puts it.

``python -m tests.bench.proxy_load grpc ADDRESS SECONDS CONCURRENCY`` is the gRPC load
generator of (p1): it sends ``SayRequest{text: "hello"}`` as raw bytes, needing no generated code.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SAY_PATH = "/portico.echo.v1.Echo/Say"
SAY_HELLO = b"\n\x05hello"  # SayRequest{text: "hello"} on the wire


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


def _wrk(
    processes: Any,
    command: list[str],
    base: str,
    ready: str,
    seconds: float,
    cpus: tuple[str, str] = ("0", "1"),
) -> Any:
    """``GET /v1/say/hello`` with wrk on what ``command`` starts at ``base``: ``cpus`` are the
    server's and wrk's cores."""
    from tests.bench import wrk
    from tests.bench.procs import wait_ready

    server_cpus, load_cpus = cpus
    server = processes.start(
        command, cpus=server_cpus, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_ready(f"{base}{ready}")
        url = f"{base}/v1/say/hello"
        wrk.measure(url, 1, "", load_cpus)  # warm-up
        return wrk.summary([wrk.measure(url, seconds, "", load_cpus)])
    finally:
        processes.stop(server)


def _through_grpc_gateway(processes: Any, address: str, seconds: float) -> Any:
    """(p3): wrk's numbers through grpc-gateway, or why it was not measured."""
    from tests.bench import grpc_gateway
    from tests.bench.procs import free_port

    try:
        gateway = grpc_gateway.binary()
    except grpc_gateway.Unavailable as error:
        return f"not measured: {error}"
    port = free_port()
    command = [str(gateway), "-upstream", address, "-port", str(port)]
    return _wrk(processes, command, f"http://127.0.0.1:{port}", "/v1/say/hello", seconds)


def _through_proxy(
    processes: Any, address: str, seconds: float, *flags: str, cpus: tuple[str, str] = ("0", "1")
) -> Any:
    """wrk's numbers through ``portico proxy --auth none`` with ``flags``."""
    from tests.bench.procs import free_port

    port = free_port()
    command = [sys.executable, "-m", "app", "proxy", "--upstream", address, "--auth", "none"]
    command += ["--http-port", str(port), *flags]
    return _wrk(processes, command, f"http://127.0.0.1:{port}", "/readyz", seconds, cpus)


def measure(processes: Any, seconds: float, connections: int) -> dict[str, Any]:
    """(p1)-(p5) in one run; a front with one core has core 0 and the load core 1."""
    from tests.bench.procs import free_port

    upstream_port = free_port()
    with tempfile.TemporaryDirectory() as work:
        upstream, kind = _upstream(processes, upstream_port, Path(work))
        try:
            address = f"127.0.0.1:{upstream_port}"
            through_proxy = _through_proxy(processes, address, seconds)
            through_gateway = _through_grpc_gateway(processes, address, seconds)
            on_pyvoy = _through_proxy(processes, address, seconds, "--server", "pyvoy")
            two_workers = _through_proxy(
                processes,
                address,
                seconds,
                *("--server", "pyvoy", "--workers", "2"),
                cpus=("0,1", ""),
            )
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
        "p2_proxy_rest": through_proxy,
        "p3_grpc_gateway": through_gateway,
        "p4_proxy_pyvoy": on_pyvoy,
        "p5_proxy_pyvoy_2_workers": two_workers,
        "proxy_added_p50_ms": through_proxy["p50_ms"] - direct_grpc["p50_ms"],
    }


if __name__ == "__main__":
    _, address, seconds, concurrency = sys.argv[1:5]
    print(json.dumps(asyncio.run(grpc_load(address, float(seconds), int(concurrency)))))
