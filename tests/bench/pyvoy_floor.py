"""The floor of (e) under pyvoy: the raw ASGI callable of ``tests/bench/baseline.py`` run by
Portico's own Envoy configuration (``EnvoyConfig``: its limits, one Envoy thread and one Python
thread per process), beside the same callable under uvicorn. What a request costs Portico under
each server, less what it costs the server itself, is then the app's own share.

``python -m tests.bench.pyvoy_floor PORT`` becomes that Envoy process; ``BENCH_BODY_FILE`` holds
the bytes it answers. Several such processes share a port, as pyvoy workers do.
"""

from __future__ import annotations

import os
import sys

from pyvoy._server import get_envoy_environ

from app.server.pyvoy_server import EnvoyConfig, envoy_command
from app.settings.config import Settings
from tests.bench.baseline import raw

MODULE = "tests.bench.pyvoy_floor"
app = websocket_app = raw  # the HTTP filter's app, and the WebSocket filter's (unused here)


def main(port: str) -> None:
    settings = Settings.from_env({"PORTICO_HTTP_PORT": port})
    command = envoy_command(EnvoyConfig(settings, module=MODULE).get_envoy_config())
    os.execve(command[0], command, {**os.environ, **get_envoy_environ()})


if __name__ == "__main__":
    main(sys.argv[1])
