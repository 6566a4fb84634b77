"""The floors of the proxy case: the least any front written on Portico's stack can spend on
``GET /v1/say/hello``, its one upstream call made and nothing else done. A raw ASGI callable
makes the call of (p2) (``Say``, the request's bytes fixed, no routing, gate, transcoding or
telemetry) and answers the reply's bytes as they came. (p6) makes it through a grpc.aio channel
under uvicorn, as ``portico proxy`` does; (p7) through Envoy's HTTP/2 client under Portico's own
Envoy configuration, as ``portico proxy --server pyvoy`` does. Beside grpc-gateway in the same
run, they say how far each upstream client lets a Python front go.

``BENCH_UPSTREAM`` is the upstream's address. (p6): ``python -m uvicorn
tests.bench.proxy_floor:through_grpc_aio``; (p7): ``python -m tests.bench.proxy_floor PORT``
becomes the Envoy process.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import grpc

from tests.bench.proxy_load import SAY_HELLO, SAY_PATH

MODULE = "tests.bench.proxy_floor"
UPSTREAM = os.environ.get("BENCH_UPSTREAM", "")
_FRAME = b"\x00" + len(SAY_HELLO).to_bytes(4, "big") + SAY_HELLO
_calls: dict[str, Any] = {}  # the grpc.aio multicallable, or Envoy's transport, made once


async def through_grpc_aio(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """(p6): the call through one grpc.aio channel, bytes in and out."""
    if scope["type"] != "http":
        return
    call = _calls.get("grpc")
    if call is None:
        call = _calls["grpc"] = grpc.aio.insecure_channel(UPSTREAM).unary_unary(SAY_PATH)
    await _answer(send, await call(SAY_HELLO))


async def through_envoy(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """(p7): the call as a gRPC request through Envoy's client to the upstream's cluster."""
    if scope["type"] != "http":
        return
    from pyqwest import Headers, Request

    transport = _calls.get("envoy")
    if transport is None:
        from pyvoy.asgi.httpclient import HTTPTransport  # only within Envoy's process

        from app.proxy.envoy_calls import cluster_name

        transport = _calls["envoy"] = HTTPTransport(cluster_name(0), timeout=60)
    headers = Headers([("content-type", "application/grpc"), ("te", "trailers")])
    request = Request("POST", f"http://{UPSTREAM}{SAY_PATH}", headers, _FRAME)
    response = await transport.execute(request)
    data = b"".join([chunk async for chunk in response.content])
    status = response.trailers.get("grpc-status") or response.headers.get("grpc-status")
    if response.status != 200 or status != "0":
        raise RuntimeError(f"the upstream answered HTTP {response.status}, grpc-status {status}")
    await _answer(send, data[5:])


app = websocket_app = through_envoy  # what (p7)'s Envoy runs (WebSocket: unused here)


async def _answer(send: Any, reply: bytes) -> None:
    length = b"%d" % len(reply)
    headers = [(b"content-type", b"application/octet-stream"), (b"content-length", length)]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": reply})


def main(port: str) -> None:
    from pyvoy._server import get_envoy_environ

    from app.proxy.envoy_calls import envoy_clusters
    from app.server.pyvoy_server import EnvoyConfig, envoy_command
    from app.settings.config import Settings

    settings = Settings.from_env({"PORTICO_HTTP_PORT": port, "PORTICO_UPSTREAMS": UPSTREAM})
    config = EnvoyConfig(settings, MODULE, upstreams=envoy_clusters(settings))
    command = envoy_command(config.get_envoy_config())
    os.execve(command[0], command, {**os.environ, **get_envoy_environ()})


if __name__ == "__main__":
    main(sys.argv[1])
