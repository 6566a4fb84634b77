"""Metrics with ``--workers 2``: any worker answering a scrape counts every worker's calls."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.multiprocess import MultiProcessCollector

from app.gateway.registry import Registry
from tests.observe.probes import Samples, parse, value
from tests.serve_process import TEST_ENV, Workers

pytestmark = pytest.mark.slow  # seconds per test: scheduled first (tests/conftest.py)

VERSION = Registry.from_package("gen").method("/cnct.kaas.api.Cluster/GetVersionInformation")
CALLS = 24


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


def _per_worker(data_dir: Path) -> dict[str, float]:
    return {path.name: _version_calls(path) for path in (data_dir / "metrics").glob("counter_*.db")}


def _scraped_calls(http: httpx.Client) -> tuple[float, Samples]:
    samples = parse(http.get("/metrics").text)
    labels = {"transport": "rest", "rpc": VERSION.full_name, "code": "OK", "http_status": "200"}
    return value(samples, "portico_requests_total", **labels), samples


def test_every_worker_counts_into_one_scrape(two_workers: Workers):
    # A new connection for every request: the kernel spreads them over both workers.
    fresh = httpx.Limits(max_keepalive_connections=0)
    with httpx.Client(base_url=two_workers.served[0].http_base, limits=fresh) as http:
        password = TEST_ENV["PORTICO_ADMIN_PASSWORD"]
        login = http.post("/v1/auth:login", json={"username": "admin", "password": password})
        auth = {"authorization": f"Bearer {login.json()['token']}"}
        # The server is shared: count from what it had counted before.
        before, _ = _scraped_calls(http)
        files_before = _per_worker(two_workers.data_dir)
        for _ in range(CALLS):
            assert http.get("/api/v1/version", headers=auth).status_code == 200
        # Each worker adds its calls into its file within a second (app/observe/loop_counters.py);
        # then every scrape, whichever worker answers it, counts all of them.
        deadline = time.monotonic() + 10
        while _scraped_calls(http)[0] != before + CALLS:
            assert time.monotonic() < deadline, "the workers' calls never added up"
            time.sleep(0.1)
        scrapes = [_scraped_calls(http) for _ in range(6)]
    assert {calls for calls, _ in scrapes} == {before + CALLS}
    samples = scrapes[-1][1]
    # Both workers are alive and one of them leads the background work.
    assert value(samples, "portico_leader") == 1
    # Each worker served some of the calls (so the scrape added up two workers' files).
    files = _per_worker(two_workers.data_dir)
    per_worker = [calls - files_before.get(name, 0.0) for name, calls in files.items()]
    assert sorted(per_worker)[-2] > 0 and sum(per_worker) == CALLS
