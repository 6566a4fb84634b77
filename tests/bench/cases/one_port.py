"""One port under pyvoy against uvicorn's HTTP port and the grpc.aio port, in turns
(:meth:`Bench.compare`): native gRPC unary (the RPC of (a), h2load), a server stream of
``FLAVORS`` messages per call, and (a) itself over REST, beside the raw ASGI floor of (e) under
each server (what the server itself costs a request). The main server (uvicorn, the grpc.aio
port beside it) and a pyvoy server of the same settings both run on core 0 with one worker."""

from __future__ import annotations

from typing import Any

import grpc
import httpx

from gen.cnct.kaas.api import api_pb2
from gen.edgeproto import flavor_pb2
from tests.bench.cases import WARM_OBJECTS, Bench, Case, Target
from tests.bench.cases.version import PATH
from tests.bench.servers import Server, portico, pyvoy_floor, uvicorn_app

VERSION_RPC = "/cnct.kaas.api.Cluster/GetVersionInformation"
SHOW_FLAVORS = "/edgeproto.FlavorApi/ShowFlavor"
FLAVORS = 20  # the messages of each ShowFlavor call
EMPTY_ENVELOPE = b"\x00\x00\x00\x00\x00"  # a gRPC request of the empty message
RAW_ASGI = "tests.bench.baseline:raw"  # the floor of (e), under each server
ONE_PORT = {"PORTICO_SERVER": "pyvoy", "PORTICO_GRPC_SERVER": "off"}
ROWS = (
    ("g_unary_grpc_aio", "(d') gRPC GetVersionInformation, grpc.aio port (h2load)"),
    ("g_unary_one_port", "(d') gRPC GetVersionInformation, pyvoy's one port (h2load)"),
    ("g_stream_grpc_aio", f"gRPC ShowFlavor of {FLAVORS} messages, grpc.aio port (h2load)"),
    ("g_stream_one_port", f"gRPC ShowFlavor of {FLAVORS} messages, pyvoy's one port (h2load)"),
    ("a_version_uvicorn", "(a) REST, uvicorn"),
    ("a_version_pyvoy", "(a) REST, pyvoy"),
    ("e_raw_uvicorn", "(e) raw ASGI callable, uvicorn"),
    ("e_raw_pyvoy", "(e) raw ASGI callable, pyvoy (Portico's Envoy configuration)"),
)


def one_port(bench: Bench) -> dict[str, Any]:
    main = bench.portico
    body = bench.notes["version_body"]
    with (
        portico(bench.processes, bench.workers, seed=WARM_OBJECTS, env=ONE_PORT) as pyvoy,
        uvicorn_app(bench.processes, bench.workers, RAW_ASGI, body) as raw_uvicorn,
        pyvoy_floor(bench.processes, bench.workers, body) as raw_pyvoy,
    ):
        one_port_grpc = pyvoy.http.removeprefix("http://")
        for server in (main, pyvoy):
            _create_flavors(server)
        version = _reply_bytes(main.grpc, VERSION_RPC, main.token, api_pb2.GetVersionReply)
        shown = _reply_bytes(main.grpc, SHOW_FLAVORS, main.token, flavor_pb2.Flavor)
        assert _reply_bytes(one_port_grpc, SHOW_FLAVORS, pyvoy.token, flavor_pb2.Flavor) == shown
        rows = bench.compare(
            {
                "g_unary_grpc_aio": _grpc(main.grpc, VERSION_RPC, main, version),
                "g_unary_one_port": _grpc(one_port_grpc, VERSION_RPC, pyvoy, version),
                "g_stream_grpc_aio": _grpc(main.grpc, SHOW_FLAVORS, main, shown),
                "g_stream_one_port": _grpc(one_port_grpc, SHOW_FLAVORS, pyvoy, shown),
                "a_version_uvicorn": Target(main.http, PATH, main.token),
                "a_version_pyvoy": Target(pyvoy.http, PATH, pyvoy.token),
                "e_raw_uvicorn": Target(raw_uvicorn, PATH),
                "e_raw_pyvoy": Target(raw_pyvoy, PATH),
            }
        )
    for key in ("g_stream_grpc_aio", "g_stream_one_port"):
        rows[key]["messages_per_second"] = rows[key]["rps"] * FLAVORS
    return rows


def _grpc(address: str, rpc: str, server: Server, reply_bytes: int) -> Target:
    return Target(
        f"http://{address}", rpc, server.token, grpc_body=EMPTY_ENVELOPE, reply_bytes=reply_bytes
    )


def _create_flavors(server: Server) -> None:
    with httpx.Client(base_url=server.http, headers=server.headers, timeout=30) as http:
        for number in range(FLAVORS):
            flavor = {"key": {"name": f"bench-{number}"}, "ram": 1024, "vcpus": 1, "disk": 10}
            http.post("/create/flavor", json=flavor).raise_for_status()


def _reply_bytes(address: str, rpc: str, token: str, reply: type) -> int:
    """The data bytes of one good reply (every message, enveloped), by a grpcio call."""
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_stream(
            rpc, request_serializer=bytes, response_deserializer=reply.FromString
        )
        messages = list(call(b"", metadata=(("authorization", f"Bearer {token}"),), timeout=30))
    return sum(5 + len(message.SerializeToString()) for message in messages)


CASES = [Case("one_port", "one port (pyvoy) and two (uvicorn)", "main", one_port, rows=ROWS)]
