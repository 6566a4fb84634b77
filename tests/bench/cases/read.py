"""(b): an authenticated read of a stored cluster: 10,000 distinct ones in random order (cold;
one, again and again, is measured in ``compared``); and (h), a list of 1,000."""

from __future__ import annotations

import random
from typing import Any

from tests.bench import wrk
from tests.bench.cases import COLD_OBJECTS, WARM_OBJECTS, Bench, Case

SEED = 21  # the same random order in every run
LIST_CONNECTIONS = 16


def cluster_path(name: str) -> str:
    return f"/api/v1/cluster?name={name}"


def cold(bench: Bench) -> dict[str, Any]:
    names = list(bench.portico.seeded)
    random.Random(SEED).shuffle(names)
    script = wrk.rotate_script([cluster_path(name) for name in names])
    return bench.wrk(cluster_path(names[0]), script) | {"objects": len(names)}


def listing(bench: Bench) -> dict[str, Any]:
    # Each reply renders 1,000 clusters: 64 of them in flight would queue seconds of work.
    result = bench.wrk("/api/v1/cluster/list", connections=LIST_CONNECTIONS)
    return result | {"objects": len(bench.portico.seeded)}


CASES = [
    Case("b_read_cold", f"(b) {COLD_OBJECTS:,} clusters in random order", "cold", cold),
    Case(
        "h_list",
        f"(h) GET /api/v1/cluster/list of {WARM_OBJECTS:,}, {LIST_CONNECTIONS} connections",
        "main",
        listing,
    ),
]
