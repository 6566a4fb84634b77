"""The yardstick: a bare Starlette route returning fixed JSON bytes, served like Portico.

``BENCH_BODY_FILE`` names the file holding the bytes; run with
``python -m uvicorn tests.bench.baseline:app --workers N``.
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
