"""The module every pyvoy worker's Envoy loads: :data:`app`, the server its supervisor named in
``PORTICO_APPLICATION`` (``portico serve``'s or the proxy's) under the lifespan and drain of
:class:`~app.server.pyvoy_app.PyvoyApp`, and :data:`websocket_app`, the bridge pyvoy's WebSocket
filter runs to it."""

from __future__ import annotations

import os

from app.server.application import load
from app.server.pyvoy_app import APPLICATION_ENV, PyvoyApp, WebSocketBridge

app = PyvoyApp(load(os.environ[APPLICATION_ENV]))
websocket_app = WebSocketBridge(app)
