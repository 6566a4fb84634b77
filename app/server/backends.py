"""The HTTP servers Portico runs on, by the name ``PORTICO_SERVER`` gives (as uvicorn picks its
protocol classes from a table). Each is one module with one entry, ``serve(settings,
application)``, imported only when chosen: under uvicorn, pyvoy (and Envoy) is never loaded.

A new server is one more module beside :mod:`app.server.on_uvicorn.serve` and
:mod:`app.server.pyvoy_server`, one line here, and its name in
:data:`app.settings.config.SERVERS`.
"""

from __future__ import annotations

from collections.abc import Callable

from app.server.application import Application, load
from app.settings.config import Settings

Backend = Callable[[Settings, Application], None]

# Each server's ``serve``, by name.
BACKENDS: dict[str, str] = {
    "uvicorn": "app.server.on_uvicorn.serve:serve",
    "pyvoy": "app.server.pyvoy_server:serve",
}


def backend(name: str) -> Backend:
    """The ``serve`` of the server called ``name`` (one of :data:`BACKENDS`)."""
    found: Backend = load(BACKENDS[name])
    return found
