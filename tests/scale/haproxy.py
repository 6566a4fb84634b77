"""HAProxy in front of Portico replicas: REST over HTTP/1.1 and gRPC over cleartext HTTP/2.

Both backends are health-checked on each replica's ``GET /readyz`` over HTTP/1.1 (the gRPC
servers' checks go to the replica's HTTP port), so a replica whose store does not answer, or that
is gone, stops getting calls within ``fall`` x ``inter``. Streams (SSE, NDJSON, gRPC streams) may
stay quiet for long: the client/server timeouts bound idleness, not a stream's length.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Replica:
    name: str
    http_port: int
    grpc_port: int


CHECK_INTERVAL_MS = 500
CHECK_FALL = 2  # failed checks before a replica is out
CHECK_RISE = 2  # passed checks before it is back

TEMPLATE = """\
global
    maxconn 4096

defaults
    mode http
    option http-keep-alive
    timeout connect 2s
    timeout client 10m
    timeout server 10m
    timeout http-request 10s
    timeout queue 5s
    # A busy replica's /readyz may take a while; one that does not answer within this is out.
    timeout check 2s
    # A connection refused by a dead replica is retried on another one; a request already
    # sent is not (it may have been committed: clients retry with an Idempotency-Key).
    retries 2
    option redispatch
    default-server inter {inter}ms fall {fall} rise {rise}

frontend rest
    bind 127.0.0.1:{http_port}
    default_backend portico_rest

backend portico_rest
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
{rest_servers}

frontend grpc
    bind 127.0.0.1:{grpc_port} proto h2
    default_backend portico_grpc

backend portico_grpc
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
{grpc_servers}
"""


STATE_CHANGE = re.compile(r"Server portico_(rest|grpc)/(\S+) is (UP|DOWN)")


@dataclass
class StateLog:
    """HAProxy's reports (on its standard error, here a file) of replicas it took out or back,
    each with the moment this reader saw it (within ``follow``'s interval)."""

    path: Path
    offset: int = 0
    changes: list[tuple[float, str]] = field(default_factory=list)

    def read(self) -> None:
        with self.path.open("rb") as log:
            log.seek(self.offset)
            new = log.read()
        self.offset += len(new)
        now = time.monotonic()
        for backend, server, state in STATE_CHANGE.findall(new.decode(errors="replace")):
            self.changes.append((now, f"{server} {backend} {state}"))

    async def follow(self, every: float = 0.1) -> None:
        """Read the log every ``every`` seconds until cancelled."""
        while True:
            self.read()
            await asyncio.sleep(every)


def config(http_port: int, grpc_port: int, replicas: list[Replica]) -> str:
    """HAProxy's configuration: REST on ``http_port``, gRPC (h2c) on ``grpc_port``."""
    rest = [f"    server {r.name} 127.0.0.1:{r.http_port} check" for r in replicas]
    grpc = [
        f"    server {r.name} 127.0.0.1:{r.grpc_port} proto h2 check port {r.http_port} "
        "check-proto h1"
        for r in replicas
    ]
    return TEMPLATE.format(
        inter=CHECK_INTERVAL_MS,
        fall=CHECK_FALL,
        rise=CHECK_RISE,
        http_port=http_port,
        grpc_port=grpc_port,
        rest_servers="\n".join(rest),
        grpc_servers="\n".join(grpc),
    )
