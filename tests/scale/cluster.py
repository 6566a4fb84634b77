"""Three Portico replicas on one PostgreSQL, behind HAProxy: started, watched, stopped for sure.

The database is a fresh schema (dropped at the end) on the server of ``PORTICO_TEST_DATABASE_URL``
or ``--database-url``; every replica's URL sets it as the search path. The replicas share one JWT
secret, as a production deployment must, so a token from any replica is good on every other.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.bench.procs import Processes, free_port, wait_ready
from tests.bench.servers import MACHINE_IP_POOL, PASSWORD, SIM_NODES, seed_clusters
from tests.postgres import fresh_schema
from tests.scale import haproxy
from tests.scale.haproxy import Replica

LEADER_GAUGE = re.compile(r"^portico_leader(?:\{[^}]*\})? ([\d.]+)$", re.MULTILINE)
REQUESTS = re.compile(r"^portico_requests_total\{[^}]*\} ([\d.e+]+)$", re.MULTILINE)


@dataclass
class Running:
    replica: Replica
    process: subprocess.Popen[bytes]

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.replica.http_port}"

    def calls_served(self) -> int:
        """How many calls this replica has answered (its ``portico_requests_total``)."""
        text = httpx.get(f"{self.http}/metrics", timeout=10).text
        return round(sum(float(n) for n in REQUESTS.findall(text)))

    def is_leader(self) -> bool:
        """Whether this replica says (its ``portico_leader`` gauge) that it leads."""
        with contextlib.suppress(httpx.HTTPError):
            found = LEADER_GAUGE.search(httpx.get(f"{self.http}/metrics", timeout=1).text)
            return bool(found and float(found.group(1)) == 1)
        return False


@dataclass
class Deployment:
    """The replicas and the load balancer in front of them."""

    processes: Processes
    database_url: str
    folder: Path
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(48))
    replicas: list[Running] = field(default_factory=list)
    http_port: int = field(default_factory=free_port)
    grpc_port: int = field(default_factory=free_port)
    # The replicas' HTTP server; under pyvoy gRPC is served on the HTTP port too.
    server: str = "uvicorn"

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def start_replica(self, name: str) -> Running:
        http_port = free_port()
        grpc_port = http_port if self.server == "pyvoy" else free_port()
        replica = Replica(name, http_port, grpc_port)
        data = self.folder / name
        data.mkdir(mode=0o700)
        env = {
            **os.environ,
            "PORTICO_DATABASE_URL": self.database_url,
            "PORTICO_DATA_DIR": str(data),
            "PORTICO_JWT_SECRET": self.secret,
            "PORTICO_ADMIN_PASSWORD": PASSWORD,
            "PORTICO_HTTP_PORT": str(replica.http_port),
            "PORTICO_SERVER": self.server,
            "PORTICO_MACHINE_IP_POOL": MACHINE_IP_POOL,
            "PORTICO_SIM_NODES": str(SIM_NODES),
        }
        if self.server != "pyvoy":  # pyvoy's HTTP port is its gRPC port
            env["PORTICO_GRPC_PORT"] = str(replica.grpc_port)
        log = (self.folder / f"{name}.log").open("wb")
        process = self.processes.start(
            [sys.executable, "-m", "app", "serve"], env=env, stdout=log, stderr=log
        )
        running = Running(replica, process)
        self.replicas.append(running)
        return running

    def start(self, count: int) -> None:
        """``count`` replicas (the first alone, so one bootstraps the admin account), then
        HAProxy; returns once HAProxy routes REST to a ready replica."""
        first = self.start_replica("r1")
        wait_ready(f"{first.http}/readyz", 60)
        rest = [self.start_replica(f"r{i}") for i in range(2, count + 1)]
        for running in rest:
            wait_ready(f"{running.http}/readyz", 60)
        config = self.folder / "haproxy.cfg"
        config.write_text(
            haproxy.config(self.http_port, self.grpc_port, [r.replica for r in self.replicas])
        )
        log = (self.folder / "haproxy.log").open("wb")
        balancer = self.processes.start(
            ["haproxy", "-db", "-f", str(config)], stdout=log, stderr=log
        )
        time.sleep(0.5)
        if balancer.poll() is not None:
            raise RuntimeError(f"haproxy stopped at once (status {balancer.returncode})")
        wait_ready(f"{self.http}/readyz", 30)

    def token(self) -> str:
        login = {"username": "admin", "password": PASSWORD}
        reply = httpx.post(f"{self.http}/v1/auth:login", json=login, timeout=30)
        reply.raise_for_status()
        return str(reply.json()["token"])

    def leaders(self) -> list[Running]:
        return [r for r in self.replicas if r.process.poll() is None and r.is_leader()]

    def wait_leader(self, timeout: float = 60.0) -> Running:
        """The first replica to say it leads, asking each every tenth of a second."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if leaders := self.leaders():
                return leaders[0]
            time.sleep(0.1)
        raise TimeoutError(f"no replica became the leader within {timeout} s")


@contextlib.contextmanager
def deployment(
    processes: Processes, server_url: str, count: int, seed: list[str], server: str = "uvicorn"
) -> Iterator[Deployment]:
    """``count`` replicas on ``server`` behind HAProxy on a fresh schema holding a cluster per
    ``seed`` name."""
    with fresh_schema(server_url, "scale") as url, tempfile.TemporaryDirectory() as folder:
        seed_clusters(url, seed)
        deployed = Deployment(processes, url, Path(folder), server=server)
        try:
            deployed.start(count)
            yield deployed
        except BaseException:
            for log in sorted(Path(folder).glob("*.log")):  # why, before the folder goes
                tail = log.read_text(errors="replace").splitlines()[-15:]
                print(f"--- {log.name}\n" + "\n".join(tail), file=sys.stderr)
            raise
        finally:
            processes.stop_all()  # before the schema is dropped
