"""``portico serve`` as a separate process on free ports, for tests of what a user runs."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

START_LINE = re.compile(
    r"portico (?P<version>\S+)(?:: gRPC on 127\.0\.0\.1:(?P<grpc_port>\d+), REST/JSON on "
    r"| on pyvoy: REST/JSON, gRPC, Connect and gRPC-Web on )"
    r"(?P<http_base>http://127\.0\.0\.1:(?P<http_port>\d+))"
)
START_SECONDS = 60.0  # generous: the machine running the tests may be busy
# Fast and quiet: a known admin password, cheap hashes, no simulated nodes.
TEST_ENV = {
    "PORTICO_ADMIN_PASSWORD": "admin-password",
    "PORTICO_PASSWORD_HASH_COST": "16",
    "PORTICO_SIM_NODES": "0",
}


@dataclass(frozen=True)
class Served:
    """A running server, as its start-up line describes it."""

    line: str
    version: str
    grpc_port: int
    http_base: str


@dataclass(frozen=True)
class Workers:
    """A running ``portico serve --workers 2``: each worker's start-up line, and its data folder."""

    served: list[Served]
    data_dir: Path


@contextmanager
def serve_process(
    python: Sequence[str],
    data_dir: Path,
    cwd: Path,
    workers: int = 1,
    *,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> Iterator[list[Served]]:
    """Run ``<python> -m app serve <args>`` on ports 0 until the block ends (``env`` adds to
    its environment); each worker's start-up line."""
    command = [*python, "-m", "app", "serve", *args, "--http-port", "0", "--grpc-port", "0"]
    process = subprocess.Popen(
        [*command, "--data-dir", str(data_dir), "--workers", str(workers)],
        cwd=cwd,
        # Its metrics go to its own data folder, whatever this environment says.
        env={k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
        | TEST_ENV
        | dict(env or {}),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert process.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in process.stderr or ():
            lines.put(line)
        lines.put(None)  # the server closed its stderr: it has ended

    # A thread reads, so that waiting for the lines has a deadline: a server that never says
    # them (or says them differently) fails the test instead of hanging it.
    reader = threading.Thread(target=read)
    reader.start()
    served: list[Served] = []
    said: list[str] = []
    deadline = time.monotonic() + START_SECONDS
    try:
        while len(served) < workers:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                pytest.fail(f"no {workers} start-up line(s) in: {''.join(said)}")
            said.append(line)
            if found := START_LINE.search(line):
                # Under pyvoy gRPC is (also) on the HTTP port.
                grpc_port = int(found["grpc_port"] or found["http_port"])
                ports = grpc_port, found["http_base"]
                served.append(Served(line, found["version"], *ports))
        yield served
    finally:
        process.terminate()
        process.wait(timeout=10)
        reader.join(timeout=10)
        process.stderr.close()


def run_as_pasted(
    script: Path, cwd: Path, token: str, timeout: float, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run a documentation page's shell ``script`` in bash as a reader's shell would: this
    environment's ``portico`` on PATH, no PORTICO_* setting but cheap password hashes (and
    ``env``), and ``AUTH``/``TOKEN`` as the quick start leaves them."""
    bin_dir = Path(sys.executable).parent
    shell = {k: v for k, v in os.environ.items() if not k.startswith("PORTICO_")}
    shell |= {
        "PATH": os.pathsep.join([str(bin_dir), os.environ["PATH"]]),
        "PORTICO_PASSWORD_HASH_COST": TEST_ENV["PORTICO_PASSWORD_HASH_COST"],
        "AUTH": f"Authorization: Bearer {token}",
        "TOKEN": token,
        **env,
    }
    return subprocess.run(
        ["bash", str(script)], cwd=cwd, env=shell, capture_output=True, text=True, timeout=timeout
    )
