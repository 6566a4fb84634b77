"""(e): the floors Portico is measured against, each served alone on the same cores: a bare
Starlette route and a raw ASGI callable, both answering the bytes of (a)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.bench.cases import Bench, Case
from tests.bench.servers import uvicorn_app


def _yardstick(app: str) -> Callable[[Bench], dict[str, Any]]:
    def measure(bench: Bench) -> dict[str, Any]:
        body = bench.notes["version_body"]
        with uvicorn_app(bench.processes, bench.workers, app, body) as base:
            return bench.wrk("/api/v1/version", base=base, token="")

    return measure


CASES = [
    Case("e_starlette", "(e) bare Starlette route", "alone",
         _yardstick("tests.bench.baseline:app")),
    Case("e_raw_asgi", "(e) raw ASGI callable", "alone", _yardstick("tests.bench.baseline:raw")),
]  # fmt: skip
