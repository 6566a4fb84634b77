"""What every protocol flow runs a call through, built once per app and shared by the flows.

Every flow (REST, WebSocket, Connect, gRPC-Web, native gRPC) matches the request with
``routes``, passes the gate (``options.authenticate``), binds and renders messages with
``transcoder``, and has ``invoker`` answer: only the framing on the wire is its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.gateway.codec.transcoding import Transcoder
from app.gateway.http_rules import RouteTable
from app.gateway.invoker import Invoker
from app.gateway.options import GatewayOptions


@dataclass(frozen=True)
class Stages:
    routes: RouteTable
    transcoder: Transcoder
    invoker: Invoker
    options: GatewayOptions
