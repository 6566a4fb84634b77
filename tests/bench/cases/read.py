"""(b): an authenticated read of a stored cluster: 10,000 distinct ones in random order (cold;
one, again and again, is measured in ``compared``); and (h), a list of 1,000, also gzipped and
in zstd."""

from __future__ import annotations

import random
from typing import Any

import httpx

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


LIST_PATH = "/api/v1/cluster/list"
GZIP_SCRIPT = 'wrk.headers["Accept-Encoding"] = "gzip"\n'
ZSTD_SCRIPT = 'wrk.headers["Accept-Encoding"] = "zstd"\n'


def listing(bench: Bench) -> dict[str, Any]:
    # Each reply renders 1,000 clusters: 64 of them in flight would queue seconds of work.
    result = bench.wrk(LIST_PATH, connections=LIST_CONNECTIONS)
    return result | {"objects": len(bench.portico.seeded), "reply_bytes": _reply_bytes(bench, "")}


def listing_gzipped(bench: Bench) -> dict[str, Any]:
    """(h) for a client that accepts gzip: each reply is compressed (the cost), and smaller on
    the wire (the bytes one reply took, as received)."""
    result = bench.wrk(LIST_PATH, GZIP_SCRIPT, connections=LIST_CONNECTIONS)
    reply_bytes = _reply_bytes(bench, "gzip")
    return result | {"objects": len(bench.portico.seeded), "reply_bytes": reply_bytes}


def listing_zstd(bench: Bench) -> dict[str, Any]:
    """(h) for a client that accepts zstd (as browsers do, preferred over gzip)."""
    result = bench.wrk(LIST_PATH, ZSTD_SCRIPT, connections=LIST_CONNECTIONS)
    reply_bytes = _reply_bytes(bench, "zstd")
    return result | {"objects": len(bench.portico.seeded), "reply_bytes": reply_bytes}


def _reply_bytes(bench: Bench, encoding: str) -> int:
    """The bytes of one list reply's body as it crossed the wire (compressed, if it was)."""
    headers = {**bench.portico.headers, "accept-encoding": encoding or "identity"}
    with httpx.stream("GET", f"{bench.portico.http}{LIST_PATH}", headers=headers) as reply:
        reply.raise_for_status()
        assert reply.headers.get("content-encoding", "") == encoding
        for _ in reply.iter_raw():
            pass
        return int(reply.num_bytes_downloaded)


CASES = [
    Case("b_read_cold", f"(b) {COLD_OBJECTS:,} clusters in random order", "cold", cold),
    Case(
        "h_list",
        f"(h) GET /api/v1/cluster/list of {WARM_OBJECTS:,}, {LIST_CONNECTIONS} connections",
        "main",
        listing,
    ),
    Case(
        "h_list_gzip",
        f"(h) the list of {WARM_OBJECTS:,} to a client accepting gzip, {LIST_CONNECTIONS} "
        "connections",
        "main",
        listing_gzipped,
    ),
    Case(
        "h_list_zstd",
        f"(h) the list of {WARM_OBJECTS:,} to a client accepting zstd, {LIST_CONNECTIONS} "
        "connections",
        "main",
        listing_zstd,
    ),
]
