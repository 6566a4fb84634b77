"""Processes the benchmark and the replica harness start, and stop for sure at the end."""

from __future__ import annotations

import contextlib
import gc
import math
import os
import platform
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def pinned(cpus: str) -> Iterator[None]:
    """Run this process on ``cpus`` (e.g. ``"1"``) meanwhile, for load it generates itself: with
    one worker the server has core 0 to itself. Nothing changes for ``""``."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {int(cpu) for cpu in cpus.split(",")})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep what this process holds so far out of its collector meanwhile: a process that
    times a server (a load generator; a test serving in its own process) paused for a full
    collection of all that and counted it as the server's (tens of milliseconds in the
    benchmark's own process, which imports the whole app; over a second late in the suite)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@dataclass
class Processes:
    """Every process started, each in a session of its own, stopped for sure at the end."""

    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, args: list[str], *, cpus: str = "", **kwargs: Any) -> subprocess.Popen[bytes]:
        if cpus and shutil.which("taskset"):
            args = ["taskset", "-c", cpus, *args]
        kwargs.setdefault("cwd", ROOT)
        process = subprocess.Popen(args, start_new_session=True, **kwargs)
        self.started.append(process)
        return process

    def stop(self, process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        # A SIGKILLed leader's children (a worker) are its session's: none is left behind.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)

    def stop_all(self) -> None:
        for process in reversed(self.started):
            self.stop(process)


@contextlib.contextmanager
def stopped_on_signals(processes: Processes) -> Any:
    """Run the block; on SIGTERM/SIGINT or any failure, stop every process started."""

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    # SIGINT too: a command started in the background by a shell inherits it ignored.
    previous = {sig: signal.signal(sig, interrupted) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        processes.stop_all()


def wait_ready(url: str, timeout: float = 30.0) -> float:
    """Seconds until ``url`` answers 200."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=1).status_code == 200:
                return time.perf_counter() - started
        time.sleep(0.02)
    raise TimeoutError(f"{url} not ready after {timeout}s")


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of sorted ``values``; NaN for none."""
    return values[min(len(values) - 1, int(len(values) * q))] if values else math.nan


def host_loop_seconds() -> float:
    """How long a fixed pure-Python loop takes here now: this host's speed drifts by tens of
    percent from one hour to the next, and a run's numbers mean little without it."""
    started = time.perf_counter()
    sum(i * i for i in range(10**7))
    return time.perf_counter() - started


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpus": os.cpu_count(),
        "processor": model or platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "kernel": platform.release(),
    }
