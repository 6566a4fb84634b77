"""Swagger UI at ``/docs`` and ReDoc at ``/redoc``, over ``/openapi.json``, with no CDN.

The pages load their scripts and style from ``/docs/assets/``: the Swagger UI and ReDoc bundles
that the ``fastapi-offline`` package ships (a dependency, so a pip install brings it), served by
Starlette's ``StaticFiles``. Nothing in the pages names another origin, so the docs work offline
and in data centres that reach no CDN. Every URL in them is relative, so they also work behind
a proxy that serves Portico under a path prefix. (ReDoc's bundle names one other origin, its
vendor's CDN for the logo in its sidebar's footer: ``/docs/redoc.js`` serves the bundle with that
address made an empty ``data:`` image, which fails to load, so ReDoc drops the logo and keeps
the footer's text; nothing trips the pages' policy and no broken image shows.)
"""

from __future__ import annotations

import hashlib
from functools import cache
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
REDOC = "/redoc"
REDOC_SCRIPT = "/docs/redoc-init.js"
REDOC_BUNDLE = "/docs/redoc.js"
PATHS = (SWAGGER_UI, SLASHED, INIT_SCRIPT, ASSETS, REDOC, REDOC_SCRIPT, REDOC_BUNDLE)
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


# ReDoc styles itself from script and runs its search in a worker made from a blob.
REDOC_CONTENT_SECURITY_POLICY = CONTENT_SECURITY_POLICY + "; worker-src 'self' blob:"
_REDOC_HEADERS = {**_HEADERS, "content-security-policy": REDOC_CONTENT_SECURITY_POLICY}
_REDOC_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Portico API</title>
<link rel="icon" href="docs/assets/favicon.png">
</head>
<body>
<div id="redoc"></div>
<script src="docs/redoc.js"></script>
<script src="docs/redoc-init.js"></script>
</body>
</html>
"""
_REDOC_INIT = """Redoc.init("openapi.json", {}, document.getElementById("redoc"));
"""
_REDOC_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
_NO_IMAGE = b"data:,"


@cache
def _redoc_bundle() -> tuple[bytes, str]:
    """The ReDoc bundle without its one outside address, and its ETag (read once, on the first
    visit to /redoc: 1 MB that the rest of the gateway never needs)."""
    bundle = (assets_folder() / "redoc.standalone.js").read_bytes()
    if _REDOC_LOGO not in bundle:  # a new fastapi-offline: the browser test says what changed
        return bundle, ""
    bundle = bundle.replace(_REDOC_LOGO, _NO_IMAGE)
    return bundle, '"' + hashlib.sha256(bundle).hexdigest()[:32] + '"'


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

    async def redoc(request: Request) -> Response:
        return HTMLResponse(_REDOC_PAGE, headers=_REDOC_HEADERS)

    async def redoc_init(request: Request) -> Response:
        return Response(_REDOC_INIT, media_type="text/javascript", headers=_REDOC_HEADERS)

    async def redoc_bundle(request: Request) -> Response:
        bundle, etag = _redoc_bundle()
        headers = {**_REDOC_HEADERS, "etag": etag, "cache-control": "no-cache"}
        if etag and request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(bundle, media_type="text/javascript", headers=headers)

    pages = (
        (SWAGGER_UI, swagger_ui), (SLASHED, to_page), (INIT_SCRIPT, init),
        (REDOC, redoc), (REDOC_SCRIPT, redoc_init), (REDOC_BUNDLE, redoc_bundle),
    )  # fmt: skip
    for path, page in pages:
        api.add_route(path, page, methods=["GET", "HEAD"], include_in_schema=False)
    api.mount(ASSETS, _Assets(directory=assets_folder()), name="api-docs")
