"""``portico serve`` as a separate process on free ports, for tests of what a user runs."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

START_LINE = re.compile(
    r"portico (?P<version>\S+): gRPC on 127\.0\.0\.1:(?P<grpc_port>\d+), "
    r"REST/JSON on (?P<http_base>http://127\.0\.0\.1:\d+)"
)
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


@contextmanager
def serve_process(python: Sequence[str], data_dir: Path, cwd: Path) -> Iterator[Served]:
    """Run ``<python> -m app serve`` on ports 0 until the block ends."""
    command = [*python, "-m", "app", "serve", "--http-port", "0", "--grpc-port", "0"]
    process = subprocess.Popen(
        [*command, "--data-dir", str(data_dir)],
        cwd=cwd,
        env={**os.environ, **TEST_ENV},
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert process.stderr is not None
    try:
        # Waits for the start-up line, or for the process to end without one.
        for line in process.stderr:
            if found := START_LINE.search(line):
                yield Served(
                    line,
                    found["version"],
                    int(found["grpc_port"]),
                    found["http_base"],
                )
                return
        pytest.fail(f"portico serve ended with {process.wait()} before its start-up line")
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stderr.close()
