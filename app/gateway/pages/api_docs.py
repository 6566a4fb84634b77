"""Swagger UI at ``/docs``, over ``/openapi.json``, with no CDN.

The page loads its script and style from ``/docs/assets/``: the Swagger UI bundle that the
``fastapi-offline`` package ships (a dependency, so a pip install brings it), served by
Starlette's ``StaticFiles``. Nothing in the page names another origin, so the docs work offline
and in data centres that reach no CDN. Every URL in it is relative, so it also works behind a
proxy that serves Portico under a path prefix. (The ReDoc bundle beside it is not served: it
always shows a logo from its vendor's CDN.)
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles

SWAGGER_UI = "/docs"
ASSETS = "/docs/assets"
INIT_SCRIPT = "/docs/init.js"
SLASHED = f"{SWAGGER_UI}/"  # redirected to the page
PATHS = (SWAGGER_UI, SLASHED, INIT_SCRIPT, ASSETS)
PREFIXES = (f"{ASSETS}/",)
# Only this origin. Swagger UI sets styles from script and shows its SVG icons as data: URLs;
# no inline script runs (it starts from init.js).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}

_SWAGGER_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Portico API</title>
<link rel="stylesheet" href="docs/assets/swagger-ui.css">
<link rel="icon" href="docs/assets/favicon.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/assets/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
"""
_INIT = """window.ui = SwaggerUIBundle({
  url: "openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  layout: "BaseLayout",
});
"""


def assets_folder() -> Path:
    """The folder of the Swagger UI bundle."""
    return Path(str(resources.files("fastapi_offline") / "static"))


class _Assets(StaticFiles):
    def file_response(self, *args: object, **kwargs: object) -> Response:
        response = super().file_response(*args, **kwargs)  # type: ignore[arg-type]
        response.headers["x-content-type-options"] = "nosniff"
        return response


def add_api_docs(api: FastAPI) -> None:
    """Serve the page, its start script and the bundle on ``api``."""

    async def swagger_ui(request: Request) -> Response:
        return HTMLResponse(_SWAGGER_PAGE, headers=_HEADERS)

    async def init(request: Request) -> Response:
        return Response(_INIT, media_type="text/javascript", headers=_HEADERS)

    async def to_page(request: Request) -> Response:
        # The page's links are relative: below "/docs/" they would miss. Relative here too,
        # so a path prefix in front of Portico keeps working.
        return RedirectResponse("../docs", status_code=308)

    for path, page in ((SWAGGER_UI, swagger_ui), (SLASHED, to_page), (INIT_SCRIPT, init)):
        api.add_route(path, page, methods=["GET", "HEAD"], include_in_schema=False)
    api.mount(ASSETS, _Assets(directory=assets_folder()), name="api-docs")
