"""The dashboard explorer's static files at ``/dashboard/``, and ``/`` pointing there.

The dashboard builds every form in the browser from ``/openapi.json``; this module only serves
its files, with Starlette's ``StaticFiles`` (ETags, 304s, HEAD, no path escapes) plus the
dashboard's security headers.

Where the files are (the first folder holding an ``index.html``):

1. ``static/`` of the source checkout this package runs from (a clone, an editable install);
2. ``<sys.prefix>/share/portico/static``: where the Docker image copies them.

Without either, ``/dashboard/`` answers 404 with a message saying where it looked.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles

log = logging.getLogger("portico.gateway")

PREFIX = "/dashboard"
FOLDER = f"{PREFIX}/"  # every path under it, when the files are mounted
PATHS = ("/", FOLDER)  # answered whether or not the files are there
INSTALLED_STATIC = Path("share", "portico", "static")  # under sys.prefix
# Everything from this origin, nothing inline: dashboard.js has no use for inline script or
# style, so an injected one (from a reply rendered by mistake) cannot run. Forms never submit
# natively (the script sends them), so a page without its script cannot put a password in a URL.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    # Revalidate every time (cheap: an ETag match is a 304), so a new version shows at once.
    "cache-control": "no-cache",
}


class DashboardFiles(StaticFiles):
    """Starlette's static files, each answer carrying the dashboard's security headers."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers.update(_HEADERS)
        return response


def static_candidates() -> list[Path]:
    """The folders searched for the dashboard's files, in order."""
    checkout = Path(__file__).resolve().parents[3]
    found = []
    # Only a source checkout has pyproject.toml beside the package; in site-packages a folder
    # named static/ may belong to anyone.
    if (checkout / "pyproject.toml").is_file():
        found.append(checkout / "static")
    found.append(Path(sys.prefix) / INSTALLED_STATIC)
    return found


def find_static_dir(candidates: Iterable[Path] | None = None) -> Path | None:
    """The first candidate folder that holds the dashboard's ``index.html``, if any."""
    for folder in static_candidates() if candidates is None else candidates:
        if (folder / "index.html").is_file():
            return folder
    return None


def add_dashboard(api: FastAPI, folder: Path | None = None) -> bool:
    """Serve the dashboard from ``folder`` (default: :func:`find_static_dir`) on ``api``;
    True when its files are there (and every path under :data:`FOLDER` is the dashboard's)."""

    async def to_dashboard(request: Request) -> Response:
        return RedirectResponse(f"{PREFIX}/", status_code=307)

    api.add_route("/", to_dashboard, methods=["GET", "HEAD"], include_in_schema=False)
    folder = folder if folder is not None else find_static_dir()
    if folder is not None and (folder / "index.html").is_file():
        api.mount(PREFIX, DashboardFiles(directory=folder, html=True), name="dashboard")
        return True
    looked = ", ".join(str(c) for c in ([folder] if folder else static_candidates()))
    log.warning("dashboard files not found (looked in %s); /dashboard/ answers 404", looked)
    text = f"The dashboard's files are not installed here (looked in {looked}).\n"

    async def missing(request: Request) -> Response:
        return PlainTextResponse(text, status_code=404)

    api.add_route(FOLDER, missing, methods=["GET", "HEAD"], include_in_schema=False)
    return False
