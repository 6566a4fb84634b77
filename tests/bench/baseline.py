"""The yardsticks: a bare Starlette route and a raw ASGI callable returning fixed JSON bytes.

``BENCH_BODY_FILE`` names the file holding the bytes; run with
``python -m uvicorn tests.bench.baseline:app`` (or ``:raw``) ``--workers N``.
"""

from __future__ import annotations

import os
from pathlib import Path

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

BODY = Path(os.environ.get("BENCH_BODY_FILE", "/dev/null")).read_bytes()


async def version(request: object) -> Response:
    """The same bytes Portico answers for ``GET /api/v1/version``."""
    return Response(BODY, media_type="application/json")


app = Starlette(routes=[Route("/api/v1/version", version)])


async def raw(scope: dict, receive: object, send: object) -> None:
    """The floor: a minimal ASGI callable answering the same bytes, no framework at all."""
    if scope["type"] != "http":
        return
    await send(RAW_START)  # type: ignore[operator]
    await send({"type": "http.response.body", "body": BODY})  # type: ignore[operator]


RAW_START = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(BODY))],
}
