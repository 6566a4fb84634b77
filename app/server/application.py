"""What a server backend serves: an :class:`Application`, named by import strings so that every
worker process (uvicorn's spawned workers, pyvoy's Envoy processes) builds its own.

``portico serve`` hands the backend :data:`app.main.PORTICO`, ``portico proxy``
:data:`app.proxy.run.PROXY`; a backend (:mod:`app.server.backends`) knows nothing else of
either, and nothing in this package imports them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from app.settings.config import Settings


class Served(Protocol):
    """What a worker runs: a Portico, or a proxy."""

    settings: Settings
    # The grpc.aio port it serves as bound (0: none of its own).
    grpc_port: int

    @property
    def http_app(self) -> Any: ...

    @property
    def shutting_down(self) -> bool: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def begin_shutdown(self) -> None: ...


# The start-up line: given the settings, the URL the HTTP port is served on, and the grpc.aio
# port as bound (0 when there is none).
Announce = Callable[[Settings, str, int], None]


@dataclass(frozen=True)
class Application:
    """A server to run: how a worker builds it, what its start-up line says, and what a backend
    must do beyond serving its HTTP app."""

    # "module:callable", a callable of Settings returning a Served; imported in each worker.
    build: str
    announce: Announce
    # The build under pyvoy, when it differs (the proxy's calls go out through Envoy's client).
    build_on_pyvoy: str = ""
    # SIGHUP asks the server to reload (``request_reload``): the proxy's descriptors.
    reload_on_hangup: bool = False
    # Whether it may serve a grpc.aio port of its own (the proxy never does).
    own_grpc_port: bool = True
    # Whether a second one on the same data folder is refused (app.server.data_lock).
    one_per_data_folder: bool = False
    # Envoy clusters its pyvoy workers may call within a request ("module:callable" of Settings).
    envoy_clusters: str = ""

    def builder(self, on_pyvoy: bool = False) -> Callable[[Settings], Served]:
        """The callable that builds the server in this process."""
        return load(self.build_on_pyvoy if on_pyvoy and self.build_on_pyvoy else self.build)

    def clusters(self, settings: Settings) -> Iterable[dict[str, Any]]:
        return load(self.envoy_clusters)(settings) if self.envoy_clusters else ()


def request_reload(served: Served) -> None:
    """Ask ``served`` to reload if it can (the proxy re-reads its upstreams' descriptors); what
    every backend does on the application's SIGHUP."""
    reload = getattr(served, "request_reload", None)
    if reload is not None:
        reload()


def load(name: str) -> Any:
    """The object ``module:attribute`` names."""
    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)
