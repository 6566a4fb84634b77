"""(c): cluster creation with a realistic body (three control-plane machines, two labelled
worker pools), each request a new name. Last on its server: the clusters it creates keep the
reconciler busy for the rest of the run. And its floor: the same requests stored as durably by a
raw ASGI callable that does nothing else (``tests/bench/baseline.py``)."""

from __future__ import annotations

import json
import tempfile
from typing import Any

from tests.bench.cases import Bench, Case
from tests.bench.servers import CLUSTER_BODY, uvicorn_app

FLOOR_VERSION = "1.29.10"  # the floor checks no version: one as long as the offered ones

# wrk.format's own headers would replace those given with -H (the token): extend those instead.
LUA = """
-- The warm-up is another wrk run, at least a second earlier: its names differ by the time.
run = os.time()
counter = 0
wrk.headers["Content-Type"] = "application/json"
request = function()
  counter = counter + 1
  local name = string.format("c%d-%d", run, counter)
  return wrk.format("POST", "/api/v1/cluster", nil, string.format(BODY_TEMPLATE, name))
end
"""


def script(k8s_version: str) -> tuple[str, int]:
    """The wrk script creating a new cluster per request, and the size of its body."""
    template = json.dumps(dict(CLUSTER_BODY, name="%s", k8s_version=k8s_version))
    return LUA.replace("BODY_TEMPLATE", json.dumps(template)), len(template)


def create(bench: Bench) -> dict[str, Any]:
    lua, body_bytes = script(bench.portico.k8s_version())
    return bench.wrk("/api/v1/cluster", lua) | {"body_bytes": body_bytes}


def floor(bench: Bench) -> dict[str, Any]:
    lua, body_bytes = script(FLOOR_VERSION)
    with (
        tempfile.TemporaryDirectory() as data,
        uvicorn_app(
            bench.processes, 1, "tests.bench.baseline:create", b"{}", {"BENCH_DATA_DIR": data}
        ) as base,
    ):
        return bench.wrk("/api/v1/cluster", lua, base=base, token="") | {"body_bytes": body_bytes}


CASES = [
    Case("c_create", "(c) POST /api/v1/cluster, realistic body", "main", create),
    Case(
        "c_floor",
        "(c) floor: the same creates stored by a raw ASGI callable",
        "alone",
        floor,
        workers=1,
    ),
]
