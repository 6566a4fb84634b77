"""Metrics with ``--workers 2``: any worker answering a scrape counts every worker's calls."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from prometheus_client.multiprocess import MultiProcessCollector

from app.gateway.registry import Registry
from tests.observe.probes import Samples, parse, value

VERSION = Registry.from_package("gen").method("/cnct.kaas.api.Cluster/GetVersionInformation")
ROOT = Path(__file__).resolve().parents[2]
CALLS = 24


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_ready(base: str, server: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    """Until /readyz answers 200 (the server printing its failure if it exits first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, "the server exited before it was ready"
        try:
            if httpx.get(f"{base}/readyz", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"the server was not ready within {timeout} s")


def _version_calls(path: Path) -> float:
    """The OK REST calls of GetVersionInformation that one worker's file counts."""
    samples = [
        sample
        for family in MultiProcessCollector.merge([str(path)], accumulate=False)
        for sample in family.samples
    ]
    return sum(
        s.value
        for s in samples
        if s.name == "portico_requests_total"
        and s.labels.get("rpc") == VERSION.full_name
        and s.labels.get("code") == "OK"
    )


def _scraped_calls(base: str) -> tuple[float, Samples]:
    samples = parse(httpx.get(f"{base}/metrics").text)
    labels = {"transport": "rest", "rpc": VERSION.full_name, "code": "OK", "http_status": "200"}
    return value(samples, "portico_requests_total", **labels), samples


def test_every_worker_counts_into_one_scrape(tmp_path):
    http_port = _free_port()
    env = {
        **os.environ,
        "PORTICO_HTTP_PORT": str(http_port),
        "PORTICO_GRPC_PORT": str(_free_port()),
        "PORTICO_DATA_DIR": str(tmp_path),
        "PORTICO_ADMIN_PASSWORD": "admin-password",
        "PORTICO_PASSWORD_HASH_COST": "16",
        "PORTICO_WORKERS": "2",
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "app", "serve"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{http_port}"
    try:
        _wait_ready(base, server)
        login = httpx.post(
            f"{base}/v1/auth:login", json={"username": "admin", "password": "admin-password"}
        )
        auth = {"authorization": f"Bearer {login.json()['token']}"}
        # A new connection each time: the kernel spreads them over both workers.
        for _ in range(CALLS):
            assert httpx.get(f"{base}/api/v1/version", headers=auth).status_code == 200
        # Each worker adds its calls into its file within a second (app/observe/local.py);
        # then every scrape, whichever worker answers it, counts all of them.
        deadline = time.monotonic() + 10
        while _scraped_calls(base)[0] != CALLS:
            assert time.monotonic() < deadline, "the workers' calls never added up"
            time.sleep(0.1)
        scrapes = [_scraped_calls(base) for _ in range(6)]
        assert {calls for calls, _ in scrapes} == {CALLS}
        samples = scrapes[-1][1]
        # Both workers are alive and one of them leads the background work.
        assert value(samples, "portico_leader") == 1
        # Each worker served some of the calls (so the scrape added up two workers' files).
        per_worker = [_version_calls(path) for path in (tmp_path / "metrics").glob("counter_*.db")]
        assert sorted(per_worker)[-2] > 0 and sum(per_worker) == CALLS
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
