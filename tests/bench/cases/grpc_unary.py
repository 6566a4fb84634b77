"""(d): the RPC of (a) over gRPC from a Python client (tests/bench/grpc_load.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.bench.cases import Bench, Case
from tests.bench.wrk import CONNECTIONS


def grpc_unary(bench: Bench) -> dict[str, Any]:
    server = bench.portico
    process = bench.processes.start(
        [sys.executable, "-m", "tests.bench.grpc_load", server.grpc, server.token,
         str(bench.seconds), str(CONNECTIONS)],
        cpus=bench.load_cpus,
        stdout=subprocess.PIPE,
    )  # fmt: skip
    out, _ = process.communicate(timeout=bench.seconds + 60)
    return dict(json.loads(out))


CASES = [Case("d_grpc", "(d) gRPC GetVersionInformation", "main", grpc_unary)]
