"""The scheduler as the original controller and node agent use it, over REST and gRPC: ids they
choose, mixed-case names, opaque node identifiers, and retried Stop/Destroy calls."""

from __future__ import annotations

import json
import uuid

import grpc
import httpx
import pytest

from gen.scheduler import scheduler_pb2 as pb
from gen.scheduler import scheduler_pb2_grpc as pb_grpc
from tests.harness import run, running, uvicorn_serving
from tests.services.kudo.world import (
    bearer,
    certificate,
    headers,
    instance,
    status_feed,
    stored_instance,
    stored_node,
    wait_status,
)

FAST = {"sim_nodes": 0, "node_grace_seconds": 0.3}


def test_a_client_chosen_id_is_kept_unique_and_used_to_destroy(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, **FAST) as server:
            token = await server.login()
            stub = pb_grpc.InstanceServiceStub(server.channel)
            chosen = instance("WebFrontend", id="WebFrontend-x7k2p")
            call = stub.Create(chosen, metadata=bearer(token))
            first = await anext(call.__aiter__())
            call.cancel()
            assert first.id == "WebFrontend-x7k2p"
            assert (await stored_instance(server, first.id)).name == "WebFrontend"

            # The same id again, over either transport: ALREADY_EXISTS, nothing changed.
            with pytest.raises(grpc.aio.AioRpcError) as taken:
                async for _ in stub.Create(chosen, metadata=bearer(token)):
                    pass
            assert taken.value.code() is grpc.StatusCode.ALREADY_EXISTS
            assert "WebFrontend-x7k2p" in taken.value.details()
            again = await server.http.post(
                "/v1/scheduler/instances",
                json={
                    "id": "WebFrontend-x7k2p",
                    "name": "Other",
                    "uri": "redis:7.4",
                    "resource": {"limit": {"cpu": 1, "memory": 64, "disk": 1}},
                },
                headers=headers(token),
            )
            assert again.status_code == 409, again.text
            assert (await stored_instance(server, "WebFrontend-x7k2p")).name == "WebFrontend"

            # No id: the scheduler assigns a UUID; mixed-case names over REST too.
            async with (
                uvicorn_serving(server.portico.http_app) as address,
                httpx.AsyncClient(base_url=f"http://{address}", headers=headers(token)) as client,
            ):
                body = {
                    "name": "Cache_Tier.v2",
                    "uri": "redis:7.4",
                    "resource": {"limit": {"cpu": 1, "memory": 64, "disk": 1}},
                }
                # The stream stays open until the instance ends; its first line is enough here.
                async with client.stream("POST", "/v1/scheduler/instances", json=body) as reply:
                    assert reply.status_code == 200
                    first_line = json.loads(await anext(reply.aiter_lines()))
            assigned = first_line["result"]["id"]
            assert str(uuid.UUID(assigned)) == assigned
            assert (await stored_instance(server, assigned)).name == "Cache_Tier.v2"
            bad = await server.http.post(
                "/v1/scheduler/instances",
                json={
                    "id": "a/b",
                    "name": "x" * 64,
                    "uri": "redis:7.4",
                    "resource": {"limit": {"cpu": 1, "memory": 64, "disk": 1}},
                },
                headers=headers(token),
            )
            assert bad.status_code == 400
            fields = [v["field"] for v in bad.json()["details"][0]["field_violations"]]
            assert fields == ["id", "name"]

            destroyed = await server.http.post(
                "/v1/scheduler/instances/WebFrontend-x7k2p:destroy", json={}, headers=headers(token)
            )
            assert destroyed.status_code == 200, destroyed.text
            await wait_status(server, "WebFrontend-x7k2p", pb.TERMINATED)

    run(scenario())


def test_an_opaque_node_identifier_registers_as_the_node_id(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, **FAST) as server:
            admin = await server.login()
            node_token = await server.add_account("edge-7", "node")
            stub = pb_grpc.NodeServiceStub(server.channel)
            node_uuid = str(uuid.uuid4())

            # The original agent's UUID, in upper case over gRPC: the node id is its canonical form.
            first = await stub.Register(
                pb.NodeRegisterRequest(certificate=node_uuid.upper()), metadata=bearer(admin)
            )
            assert first.code == 0 and first.subnet
            again = await server.http.post(
                "/v1/scheduler/nodes:register",
                json={"certificate": node_uuid},
                headers=headers(admin),
            )
            assert again.status_code == 200, again.text
            assert again.json()["subnet"] == first.subnet
            assert "already registered" in again.json()["description"]
            assert await stored_node(server, node_uuid) is not None

            # A DNS-label identifier, still bound to the node account named like it.
            own = await server.http.post(
                "/v1/scheduler/nodes:register",
                json={"certificate": "edge-7"},
                headers=headers(node_token),
            )
            assert own.status_code == 200, own.text
            with pytest.raises(grpc.aio.AioRpcError) as other:
                await stub.Register(
                    pb.NodeRegisterRequest(certificate="edge-8"), metadata=bearer(node_token)
                )
            assert other.value.code() is grpc.StatusCode.PERMISSION_DENIED
            # A certificate cannot take over an id registered by identifier.
            with pytest.raises(grpc.aio.AioRpcError) as takeover:
                await stub.Register(
                    pb.NodeRegisterRequest(certificate=certificate("edge-7")),
                    metadata=bearer(node_token),
                )
            assert takeover.value.code() is grpc.StatusCode.ALREADY_EXISTS

            for garbage in ("not a node id!", "-----BEGIN CERTIFICATE-----\nxx\n"):
                refused = await server.http.post(
                    "/v1/scheduler/nodes:register",
                    json={"certificate": garbage},
                    headers=headers(admin),
                )
                assert refused.status_code == 400, refused.text
                violation = refused.json()["details"][0]["field_violations"][0]
                assert violation["field"] == "certificate"
            assert await stored_node(server, "edge-8") is None

    run(scenario())


def test_repeated_stop_and_destroy_answer_ok_and_true_conflicts_are_refused(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, **FAST) as server:
            token = await server.login()
            stub = pb_grpc.InstanceServiceStub(server.channel)
            async with status_feed(server, token, "edge-node", 4, 4096, 40):
                call = stub.Create(instance("api", id="api-1"), metadata=bearer(token))
                assert (await anext(call.__aiter__())).id == "api-1"
                ident = pb.InstanceIdentifier(id="api-1")
                await wait_status(server, "api-1", pb.RUNNING)
                await stub.Stop(ident, metadata=bearer(token))
                await stub.Stop(ident, metadata=bearer(token))  # while STOPPING or STOPPED
                stopped = await wait_status(server, "api-1", pb.STOPPED)
                await stub.Stop(ident, metadata=bearer(token))
                repeat = await server.http.post(
                    "/v1/scheduler/instances/api-1:stop", json={}, headers=headers(token)
                )
                assert repeat.status_code == 200, repeat.text
                assert (await stored_instance(server, "api-1")).history == stopped.history

                await stub.Destroy(ident, metadata=bearer(token))
                terminated = await wait_status(server, "api-1", pb.TERMINATED)
                await stub.Destroy(ident, metadata=bearer(token))
                repeat = await server.http.post(
                    "/v1/scheduler/instances/api-1:destroy", json={}, headers=headers(token)
                )
                assert repeat.status_code == 200, repeat.text
                assert (await stored_instance(server, "api-1")).history == terminated.history

                # Stopping or starting what was destroyed is a real conflict.
                with pytest.raises(grpc.aio.AioRpcError) as conflict:
                    await stub.Stop(ident, metadata=bearer(token))
                assert conflict.value.code() is grpc.StatusCode.FAILED_PRECONDITION
                refused = await server.http.post(
                    "/v1/scheduler/instances/api-1:start", json={}, headers=headers(token)
                )
                assert refused.status_code == 400
                assert "TERMINATED" in refused.json()["message"]
                call.cancel()

    run(scenario())
