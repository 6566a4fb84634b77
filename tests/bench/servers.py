"""The servers the benchmark measures: ``portico serve`` on a seeded store, and yardsticks.

Stores are seeded before the server starts, straight through the object store, so seeding
10,000 objects takes seconds instead of dominating the run. A seeded object is the record
``GetCluster`` reads (kind ``kaas.cluster``: a running cluster's status with its kubeconfig), with
no spec beside it, so the reconciler leaves it alone and background work does not skew reads.
Tokens are issued with the server's secret, as Login would issue them, instead of 1,000 logins
that would each spend a deliberately slow password hash.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from app.auth.tokens import TokenIssuer
from app.services.kaas.records import CLUSTER
from app.sim.kubeconfig import issue_cluster_ca, issue_token, render_kubeconfig
from app.store import ObjectStore
from gen.cnct.kaas.api import api_pb2
from tests.bench.procs import Processes, free_port, wait_ready

PASSWORD = "bench-password"
# A realistic cluster: three control-plane machines and two labelled worker pools.
CLUSTER_BODY = {
    "k8s_version": "",  # filled from the server's offer
    "control_plane_nodes": {
        "count": 3,
        "instanceType": "standard",
        "labels": [{"name": "node-role.kubernetes.io/control-plane", "value": "true"}],
    },
    "worker_node_pools": [
        {
            "name": "general",
            "instanceType": "standard",
            "count": 3,
            "labels": [{"name": "pool", "value": "general"}, {"name": "team", "value": "web"}],
        },
        {
            "name": "gpu",
            "instanceType": "gpu",
            "count": 2,
            "labels": [{"name": "pool", "value": "gpu"}, {"name": "team", "value": "ml"}],
        },
    ],
}
# Room for every machine the create cases ask for: the default /16 would run out.
MACHINE_IP_POOL = "10.0.0.0/8"
# Room (8 CPUs each) for the scheduler instances the SSE cases start: two nodes would not do.
SIM_NODES = 8
IP_MARKER = "192.0.2.255"  # TEST-NET-1: in no seeded cluster


@dataclass
class Server:
    """A running ``portico serve``."""

    process: subprocess.Popen[bytes]
    http: str
    grpc: str
    token: str
    secret: str
    start_seconds: float
    seeded: list[str]

    @property
    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"}

    def tokens(self, count: int) -> list[str]:
        """``count`` distinct tokens of the bench account, signed as Login signs them."""
        issuer = TokenIssuer(self.secret.encode())
        claims = issuer.verify(self.token)
        return [
            issuer.issue(
                account_id=claims.subject,
                username=claims.name,
                role=claims.role,
                password_stamp=claims.password_stamp,
            )[0]
            for _ in range(count)
        ]

    def k8s_version(self) -> str:
        return k8s_version(self.http, self.headers)


def k8s_version(base: str, headers: dict[str, str]) -> str:
    """A Kubernetes version the cluster manager at ``base`` offers."""
    # It lists what it offers in its validation error: ask for a bad one.
    body = dict(CLUSTER_BODY, name="probe", k8s_version="0.0.0")
    reply = httpx.post(f"{base}/api/v1/cluster", json=body, headers=headers, timeout=30)
    return re.search(r"versions ([\d.]+)", reply.text).group(1)  # type: ignore[union-attr]


def seed_clusters(url: str, names: list[str]) -> None:
    """Store a running cluster's status under each of ``names`` in the store at ``url``, in one
    transaction."""
    # One rendering with markers (neither "@" nor "." is in base64, so not in the CA data),
    # filled in per cluster: rendering YAML 10,000 times would dominate seeding.
    ca = issue_cluster_ca("bench", not_before=datetime.now(UTC))
    template = render_kubeconfig("@@NAME@@", IP_MARKER, ca_pem=ca, token="@@TOKEN@@")

    async def seed() -> None:
        async with ObjectStore.open(url) as store, store.transaction() as tx:
            for index, name in enumerate(names):
                ip = f"10.{index // 65536}.{index // 256 % 256}.{index % 256}"
                status = api_pb2.ClusterDetailItem(
                    name=name,
                    status=api_pb2.RUNNING,
                    status_message="8 of 8 machine(s) Ready",
                    kubeconfig=template.replace("@@NAME@@", name)
                    .replace(IP_MARKER, ip)
                    .replace("@@TOKEN@@", issue_token()),
                )
                await tx.create(CLUSTER, name, status)

    asyncio.run(seed())


@contextlib.contextmanager
def portico(
    processes: Processes,
    workers: int,
    *,
    seed: int = 0,
    metrics: bool = True,
    prepare: Callable[[Path], None] | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[Server]:
    """``portico serve`` with ``workers`` workers on a fresh SQLite store of ``seed`` clusters
    (named ``bench-00000``...), after ``prepare(data_dir)`` and with ``env`` added to its
    environment; with one worker it runs on core 0."""
    with tempfile.TemporaryDirectory() as data:
        names = [f"bench-{i:05d}" for i in range(seed)]
        if names:
            seed_clusters(f"sqlite:///{Path(data) / 'portico.db'}", names)
        if prepare is not None:
            prepare(Path(data))
        http_port, grpc_port = free_port(), free_port()
        secret = secrets.token_urlsafe(48)
        env = {
            **os.environ,
            "PORTICO_DATA_DIR": data,
            "PORTICO_ADMIN_PASSWORD": PASSWORD,
            "PORTICO_JWT_SECRET": secret,
            "PORTICO_HTTP_PORT": str(http_port),
            "PORTICO_GRPC_PORT": str(grpc_port),
            "PORTICO_WORKERS": str(workers),
            "PORTICO_METRICS": "true" if metrics else "false",
            "PORTICO_MACHINE_IP_POOL": MACHINE_IP_POOL,
            "PORTICO_SIM_NODES": str(SIM_NODES),
            **(env or {}),
        }
        started = time.perf_counter()
        process = processes.start(
            [sys.executable, "-m", "app", "serve"],
            cpus="0" if workers == 1 else "",
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{http_port}"
            wait_ready(f"{base}/readyz")
            start_seconds = time.perf_counter() - started
            login = {"username": "admin", "password": PASSWORD}
            reply = httpx.post(f"{base}/v1/auth:login", json=login)
            reply.raise_for_status()
            token = reply.json()["token"]
            yield Server(
                process, base, f"127.0.0.1:{grpc_port}", token, secret, start_seconds, names
            )
        finally:
            processes.stop(process)


@contextlib.contextmanager
def uvicorn_app(
    processes: Processes,
    workers: int,
    app: str,
    body: bytes,
    env: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """A yardstick ASGI ``app`` answering ``body``, under uvicorn with Portico's settings that
    matter here (uvloop, httptools, no access log, no server header), with ``env`` added to its
    environment; its base URL."""
    port = free_port()
    with _body_file(body) as body_env:
        process = processes.start(
            [sys.executable, "-m", "uvicorn", app, "--port", str(port), "--workers", str(workers),
             "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--no-server-header",
             "--log-level", "warning"],
            cpus="0" if workers == 1 else "",
            env={**os.environ, **body_env, **(env or {})},
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            wait_ready(f"{base}/api/v1/version")
            yield base
        finally:
            processes.stop(process)


@contextlib.contextmanager
def pyvoy_floor(processes: Processes, workers: int, body: bytes) -> Iterator[str]:
    """The raw ASGI yardstick answering ``body`` under Portico's Envoy configuration
    (``tests/bench/pyvoy_floor.py``), ``workers`` processes on one port; its base URL."""
    port = free_port()
    with _body_file(body) as body_env:
        started = [
            processes.start(
                [sys.executable, "-m", "tests.bench.pyvoy_floor", str(port)],
                cpus="0" if workers == 1 else "",
                env={**os.environ, **body_env},
            )
            for _ in range(workers)
        ]
        try:
            base = f"http://127.0.0.1:{port}"
            wait_ready(f"{base}/api/v1/version")
            yield base
        finally:
            for process in started:
                processes.stop(process)


@contextlib.contextmanager
def _body_file(body: bytes) -> Iterator[dict[str, str]]:
    """``body`` in a file, and the environment that names it to a yardstick."""
    with tempfile.NamedTemporaryFile() as body_file:
        body_file.write(body)
        body_file.flush()
        yield {"BENCH_BODY_FILE": body_file.name}
