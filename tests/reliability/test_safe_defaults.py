"""Item 14: a server wired without authentication refuses every call instead of admitting it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import httpx

from app.gateway.admission import NO_AUTH
from app.gateway.registry import Registry
from app.gateway.routes import GatewayOptions, create_app
from app.grpc_server.server import create_server, start, stop
from app.services.kudo.certificates import self_signed
from app.services.kudo.records import NODE
from app.services.kudo.service import NodeService
from app.sim.clock import SimClock
from app.store import ObjectStore
from gen.cnct.kaas.api import api_pb2, api_pb2_grpc
from gen.scheduler import scheduler_pb2 as pb
from gen.scheduler import scheduler_pb2_grpc as pb_grpc

REGISTRY = Registry.from_package("gen")


def test_a_gateway_built_without_an_authenticate_hook_refuses_every_call():
    async def call() -> httpx.Response:
        app = create_app(REGISTRY, {}, GatewayOptions())
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://portico") as http:
            return await http.get("/api/v1/version")

    reply = asyncio.run(call())
    assert reply.status_code == 401
    assert reply.json()["message"] == "this server has no authentication configured"


def test_a_grpc_server_built_without_an_authenticate_hook_refuses_every_call():
    async def call() -> grpc.StatusCode:
        server, port = create_server("127.0.0.1:0", REGISTRY, {})
        await start(server)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = api_pb2_grpc.ClusterStub(channel)
                try:
                    await stub.GetVersionInformation(api_pb2.GetVersionMsg())
                except grpc.aio.AioRpcError as error:
                    return error.code()
                return grpc.StatusCode.OK
        finally:
            await stop(server, grace=0.1)

    assert asyncio.run(call()) is grpc.StatusCode.UNAUTHENTICATED


def test_without_a_caller_no_one_may_speak_for_a_node(tmp_path: Path):
    """Even wired with NO_AUTH on purpose, a node call with nobody signed in changes nothing."""

    async def register() -> tuple[grpc.StatusCode, int]:
        async with ObjectStore.open(f"sqlite:///{tmp_path / 'portico.db'}") as store:
            nodes = NodeService(store, SimClock(0.01), "10.128.0.0/16", 30.0)
            server, port = create_server(
                "127.0.0.1:0", REGISTRY, {"scheduler.NodeService": nodes}, authenticate=NO_AUTH
            )
            await start(server)
            try:
                async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                    stub = pb_grpc.NodeServiceStub(channel)
                    request = pb.NodeRegisterRequest(certificate=self_signed("edge-1")[0])
                    try:
                        await stub.Register(request)
                        code = grpc.StatusCode.OK
                    except grpc.aio.AioRpcError as error:
                        code = error.code()
            finally:
                await stop(server, grace=0.1)
            return code, len(await store.list(NODE))

    assert asyncio.run(register()) == (grpc.StatusCode.UNAUTHENTICATED, 0)
