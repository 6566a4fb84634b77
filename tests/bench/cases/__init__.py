"""Benchmark cases: each module holds one or a few, and ``tests/bench/run.py`` lists them.

A case names the server it runs on (``on``): ``main`` (metrics on, 1,000 seeded clusters),
``cold`` (10,000 seeded clusters), ``backlog`` or ``alone`` (no Portico running: the case starts
what it measures). The driver starts each server once per worker count and runs its cases in the
order listed. A case returns a dict of numbers; one with ``rps`` is a row of the load table, any
other is described by the case's ``describe``. A case measuring several rows in turns
(:meth:`Bench.compare`) names them in ``rows`` and returns each one's dict by its key.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.bench import h2load, wrk
from tests.bench.procs import Processes
from tests.bench.servers import Server

SETTLED_SECONDS = 0.05  # a health check this quick: the server has no backlog
WARM_OBJECTS = 1_000  # clusters on the main and unmetered servers: the list case lists them
COLD_OBJECTS = 10_000  # clusters on the cold server, read in random order
TURN_SECONDS = 1  # the slices rows compared with each other are measured in, in turns


@dataclass(frozen=True)
class Target:
    """One row's load: GETs of ``path`` on the server at ``base`` (with ``token``, if any), the
    requests ``script`` makes, or gRPC calls of ``grpc_body`` to the method at ``path``."""

    base: str
    path: str
    token: str = ""
    script: str = ""
    # A native gRPC row: h2load POSTs this envelope; a good reply has this many data bytes.
    grpc_body: bytes = b""
    reply_bytes: int = 0


@dataclass
class Bench:
    """What a case gets: the processes, the worker count, the run length and its server."""

    processes: Processes
    workers: int
    seconds: float
    server: Server | None
    # Facts a case needs from an earlier server (the bytes of GET /api/v1/version).
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def load_cpus(self) -> str:
        """With one worker the server has core 0 and the load generator core 1."""
        return "1" if self.workers == 1 else ""

    @property
    def portico(self) -> Server:
        if self.server is None:
            raise RuntimeError("this case runs on no Portico server")
        return self.server

    def wrk(
        self,
        path: str,
        script: str = "",
        *,
        base: str = "",
        token: str | None = None,
        connections: int = wrk.CONNECTIONS,
    ) -> dict[str, Any]:
        """wrk against ``path`` of Portico (or of ``base``) with the bench token, after a
        one-second warm-up; then wait for the server to finish the requests wrk left behind."""
        url = f"{base or self.portico.http}{path}"
        token = self.portico.token if token is None else token
        for seconds in (1, self.seconds):  # warm-up, then the measured run
            measured = wrk.measure(url, seconds, token, self.load_cpus, script, connections)
            settle(base or self.portico.http)
        unusual = {} if connections == wrk.CONNECTIONS else {"connections": connections}
        return wrk.summary([measured]) | unusual

    def compare(
        self, targets: dict[str, Target], seconds: float | None = None
    ) -> dict[str, dict[str, Any]]:
        """The rows of ``targets`` measured in turns, ``TURN_SECONDS`` each, until each has had
        ``seconds`` (the run length by default): rows whose ratio is a target then share the
        machine's slow and quick moments (on a shared machine its speed drifts by tens of
        percent within seconds). Each row's numbers are those of all its slices together; each
        has a 1 s warm-up first."""
        slices: dict[str, list[wrk.Slice]] = defaultdict(list)
        took: dict[str, float] = defaultdict(float)
        turns = max(1, round((seconds or self.seconds) / TURN_SECONDS))
        for turn in range(1 + turns):  # the first turn is every row's warm-up
            for key, target in targets.items():
                started = time.monotonic()
                url = f"{target.base}{target.path}"
                if target.grpc_body:
                    measured = h2load.measure(
                        url,
                        TURN_SECONDS,
                        target.token,
                        self.load_cpus,
                        target.grpc_body,
                        target.reply_bytes,
                    )
                else:
                    measured = wrk.measure(
                        url, TURN_SECONDS, target.token, self.load_cpus, target.script
                    )
                settle(target.base)
                if turn:
                    slices[key].append(measured)
                took[key] += time.monotonic() - started
        return {key: wrk.summary(slices[key]) | {"took_seconds": took[key]} for key in targets}


def settle(base: str, timeout: float = 10.0) -> None:
    """Return once the server answers a health check promptly (requests a load run left in its
    queue must not slow the next case), or after ``timeout``: background work the case started,
    such as reconciling the clusters it created, may keep the server busy for longer."""
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=base, timeout=timeout) as client:
        while time.monotonic() < deadline:
            started = time.perf_counter()
            with contextlib.suppress(httpx.HTTPError):
                client.get("/healthz")
            if time.perf_counter() - started < SETTLED_SECONDS:
                return


@dataclass(frozen=True)
class Case:
    key: str
    label: str
    on: str
    run: Callable[[Bench], dict[str, Any]]
    # For a case that is not a load row: one line saying what it measured.
    describe: Callable[[dict[str, Any]], str] | None = None
    # Measured with this worker count only (a case whose subject has no workers).
    workers: int | None = None
    # The rows (key, label) a case measures in turns; then ``run`` returns each one's numbers
    # by its key, and ``key`` and ``label`` name the case itself.
    rows: tuple[tuple[str, str], ...] = ()

    def row_labels(self) -> tuple[tuple[str, str], ...]:
        """The rows this case adds to the results: its own, or those it measures in turns."""
        return self.rows or ((self.key, self.label),)
