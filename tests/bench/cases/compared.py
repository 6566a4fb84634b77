"""The rows whose ratios are targets, measured in turns: (a) on the main server (also with the
two request headers (g)'s POST adds), on a server started with ``PORTICO_METRICS=false`` and on
the two floors of (e), a bare Starlette route and a raw ASGI callable (each answering the bytes
of (a), under uvicorn with uvloop and httptools, as Portico), and its RPC over Connect, (f) and
(g); then (b), one stored cluster again and again, with and without metrics.

Every one of them is up for the whole case and each row runs a second at a time in turn
(:meth:`Bench.compare`): measured one after the other, minutes apart, their ratios moved by as
much as the machine's speed drifts, which here is tens of percent.
"""

from __future__ import annotations

import contextlib
from typing import Any

from tests.bench.cases import WARM_OBJECTS, Bench, Case, Target, connect
from tests.bench.cases.read import cluster_path
from tests.bench.cases.version import PATH
from tests.bench.servers import portico, uvicorn_app

FLOORS = {
    "e_starlette": ("(e) bare Starlette route", "tests.bench.baseline:app"),
    "e_raw_asgi": ("(e) raw ASGI callable", "tests.bench.baseline:raw"),
}
VERSIONS = (
    ("a_version", "(a) GET /api/v1/version"),
    ("a_version_no_metrics", "(a) with PORTICO_METRICS=false"),
    ("a_version_headers", "(a) with the two headers (g) adds"),
    *((key, label) for key, (label, _) in FLOORS.items()),
    *((key, label) for key, (label, _, _) in connect.ROWS.items()),
)
READS = (
    ("b_read", "(b) GET /api/v1/cluster?name=…, one cluster"),
    ("b_read_no_metrics", "(b) with PORTICO_METRICS=false"),
)


def compared(bench: Bench) -> dict[str, Any]:
    main = bench.portico
    body = bench.notes["version_body"]
    with contextlib.ExitStack() as servers:
        unmetered = servers.enter_context(
            portico(bench.processes, bench.workers, seed=WARM_OBJECTS, metrics=False)
        )
        floors = {
            key: servers.enter_context(uvicorn_app(bench.processes, bench.workers, app, body))
            for key, (_, app) in FLOORS.items()
        }
        versions = bench.compare(
            {
                "a_version": Target(main.http, PATH, main.token),
                "a_version_no_metrics": Target(unmetered.http, PATH, unmetered.token),
                "a_version_headers": Target(main.http, PATH, main.token, connect.SAME_HEADERS_LUA),
                **{key: Target(base, PATH) for key, base in floors.items()},
                **{
                    key: Target(main.http, connect.PATH, main.token, connect.script(kind, sent))
                    for key, (_, kind, sent) in connect.ROWS.items()
                },
            }
        )
        cluster = cluster_path(main.seeded[0])
        reads = bench.compare(
            {
                "b_read": Target(main.http, cluster, main.token),
                "b_read_no_metrics": Target(unmetered.http, cluster, unmetered.token),
            }
        )
    return versions | reads


CASES = [
    Case("compared", "(a), (b), (e), (f), (g) in turns", "main", compared, rows=VERSIONS + READS),
]
