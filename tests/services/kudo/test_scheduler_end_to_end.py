"""The scheduler end to end, over REST and gRPC: nodes (one a real node-agent process), placement,
waiting for room, the state machine, failure and rescheduling, and streams that clean up."""

from __future__ import annotations

import asyncio
import ipaddress
import json
from typing import Any

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from app.services.kudo.records import INSTANCE, InstanceRecord
from gen.scheduler import scheduler_pb2 as pb
from gen.scheduler import scheduler_pb2_grpc as pb_grpc
from tests.harness import run, running, uvicorn_serving
from tests.services.kudo.world import (
    bearer,
    certificate,
    eventually,
    headers,
    instance,
    node_agent,
    open_streams,
    status_feed,
    stored_instance,
    stored_node,
    wait_status,
)

FAST = {"sim_nodes": 0, "node_grace_seconds": 0.3}


def _violations(error: grpc.aio.AioRpcError) -> list[str]:
    status = rpc_status.from_call(error)
    assert status is not None
    found = []
    for detail in status.details:
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(bad):
            found.extend(v.field for v in bad.field_violations)
    return found


async def _statuses_until(call: Any, wanted: int) -> list[pb.InstanceStatus]:
    seen = []
    async for status in call:
        seen.append(status)
        if status.status == wanted:
            return seen
    raise AssertionError(f"stream ended before {pb.Status.Name(wanted)}: {seen}")


def _names(statuses: list[pb.InstanceStatus]) -> list[str]:
    return [pb.Status.Name(s.status) for s in statuses]


def test_a_node_account_speaks_only_for_the_node_named_like_it(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=0) as server:
            node_token = await server.add_account("edge-1", "node")
            admin_token = await server.login()
            stub = pb_grpc.NodeServiceStub(server.channel)

            own = await stub.Register(
                pb.NodeRegisterRequest(certificate=certificate("edge-1")),
                metadata=bearer(node_token),
            )
            assert own.code == 0
            other = await server.http.post(
                "/v1/scheduler/nodes:register",
                json={"certificate": certificate("edge-2")},
                headers=headers(node_token),
            )
            assert other.status_code == 403, other.text
            assert "edge-2" in other.json()["message"]
            assert await stored_node(server, "edge-2") is None

            def report(node: str) -> pb.NodeStatus:
                limit = pb.ResourceSummary(cpu=2, memory=1024, disk=10)
                return pb.NodeStatus(id=node, status=pb.RUNNING, resource=pb.Resource(limit=limit))

            await stub.Status(iter([report("edge-1")]), metadata=bearer(node_token))
            with pytest.raises(grpc.aio.AioRpcError) as spoofed:
                await stub.Status(iter([report("edge-2")]), metadata=bearer(node_token))
            assert spoofed.value.code() is grpc.StatusCode.PERMISSION_DENIED

            # An admin acts for any node; the node account cannot remove another one.
            await stub.Register(
                pb.NodeRegisterRequest(certificate=certificate("edge-2")),
                metadata=bearer(admin_token),
            )
            with pytest.raises(grpc.aio.AioRpcError) as removed:
                await stub.Unregister(
                    pb.NodeUnregisterRequest(id="edge-2"), metadata=bearer(node_token)
                )
            assert removed.value.code() is grpc.StatusCode.PERMISSION_DENIED
            assert await stored_node(server, "edge-2") is not None
            gone = await server.http.post(
                "/v1/scheduler/nodes/edge-1:unregister", json={}, headers=headers(node_token)
            )
            assert gone.status_code == 200, gone.text

    run(scenario())


def test_nodes_register_once_per_certificate_and_the_pool_runs_out(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=0, node_subnet_pool="10.128.0.0/23") as server:
            token = await server.login()
            pem = certificate("node-a")
            first = await server.http.post(
                "/v1/scheduler/nodes:register", json={"certificate": pem}, headers=headers(token)
            )
            assert first.status_code == 200, first.text
            assert first.json()["code"] == 0
            assert first.json()["subnet"] == "10.128.0.0/24"
            again = await server.http.post(
                "/v1/scheduler/nodes:register", json={"certificate": pem}, headers=headers(token)
            )
            assert again.json()["subnet"] == "10.128.0.0/24"
            assert "already registered" in again.json()["description"]

            stub = pb_grpc.NodeServiceStub(server.channel)
            with pytest.raises(grpc.aio.AioRpcError) as garbage:
                await stub.Register(
                    pb.NodeRegisterRequest(certificate="not a certificate"), metadata=bearer(token)
                )
            assert garbage.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            assert _violations(garbage.value) == ["certificate"]
            stolen = await server.http.post(
                "/v1/scheduler/nodes:register",
                json={"certificate": certificate("node-a")},
                headers=headers(token),
            )
            assert stolen.status_code == 409

            second = await stub.Register(
                pb.NodeRegisterRequest(certificate=certificate("node-b")), metadata=bearer(token)
            )
            assert (second.code, second.subnet) == (0, "10.128.1.0/24")
            with pytest.raises(grpc.aio.AioRpcError) as full:
                await stub.Register(
                    pb.NodeRegisterRequest(certificate=certificate("node-c")),
                    metadata=bearer(token),
                )
            assert full.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            # Leaving frees the subnet for the next node.
            left = await server.http.post(
                "/v1/scheduler/nodes/node-a:unregister", json={}, headers=headers(token)
            )
            assert left.status_code == 200 and left.json()["code"] == 0
            third = await stub.Register(
                pb.NodeRegisterRequest(certificate=certificate("node-c")), metadata=bearer(token)
            )
            assert third.subnet == "10.128.0.0/24"
            unknown = await server.http.post(
                "/v1/scheduler/nodes/nobody:unregister", json={}, headers=headers(token)
            )
            assert unknown.status_code == 404

    run(scenario())


def test_bad_instances_and_reports_are_refused_naming_the_fields(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, **FAST) as server:
            token = await server.login()
            body = {
                "id": "mine/../x",
                "name": "-Web_1",
                "uri": "http://nginx",
                "ports": [{"source": 0, "destination": 70000}],
                "environnement": ["1BAD=x"],
                "resource": {"limit": {"cpu": 1, "memory": 0, "disk": -1}},
            }
            reply = await server.http.post(
                "/v1/scheduler/instances", json=body, headers=headers(token)
            )
            assert reply.status_code == 400
            fields = [v["field"] for v in reply.json()["details"][0]["field_violations"]]
            # The field rules' violations in field order (the image reference's among them).
            assert fields == [
                "id",
                "name",
                "uri",
                "environnement[0]",
                "resource.limit.memory",
                "resource.limit.disk",
                "ports[0].source",
                "ports[0].destination",
            ]
            stub = pb_grpc.InstanceServiceStub(server.channel)
            with pytest.raises(grpc.aio.AioRpcError) as error:
                async for _ in stub.Create(pb.Instance(name="web"), metadata=bearer(token)):
                    pass
            assert error.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            assert "uri" in _violations(error.value)
            assert await server.portico.store.list(INSTANCE) == []
            unknown = await server.http.post(
                "/v1/scheduler/nodes:status",
                content=json.dumps({"id": "ghost", "status": "RUNNING"}) + "\n",
                headers={**headers(token), "content-type": "application/x-ndjson"},
            )
            assert unknown.status_code == 404

    run(scenario())


def test_instances_wait_for_room_move_through_states_and_survive_a_node_failure(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, **FAST) as server:
            async with node_agent(server, tmp_path / "certs", "agent-node", 4, 4096, 40):
                await _crowd_and_fail_nodes(server)
            # The agent is gone, its stream with it: no stream is left open.
            await eventually(lambda: _no_open_streams(server), what="every stream closed")

    run(scenario())


async def _crowd_and_fail_nodes(server: Any) -> None:
    token = await server.login()
    md = bearer(token)
    stub = pb_grpc.InstanceServiceStub(server.channel)
    agent = await stored_node(server, "agent-node")
    assert agent is not None and agent.limit.cpu == 4
    async with status_feed(server, token, "edge-node", 2, 2048, 20) as edge:
        # Best fit: the first instance fills the small node, two go to the agent's node.
        calls = [
            stub.Create(instance(f"app-{i}", cpu=2, memory=512, disk=5), metadata=md)
            for i in range(4)
        ]
        placed = [await _statuses_until(call, pb.RUNNING) for call in calls[:3]]
        ids = [statuses[0].id for statuses in placed]
        assert _names(placed[0]) == ["SCHEDULING", "SCHEDULED", "STARTING", "RUNNING"]
        usage = placed[0][-1].resource.usage
        assert 1 <= usage.cpu <= 2 and 0 < usage.memory <= 512  # a share of its limits
        records = [await stored_instance(server, i) for i in ids]
        assert [r.node for r in records] == ["edge-node", "agent-node", "agent-node"]
        edge_subnet = (await stored_node(server, "edge-node")).subnet
        assert ipaddress.ip_address(records[0].ip) in ipaddress.ip_network(edge_subnet)

        # No room for the fourth: it waits in SCHEDULING (checked again below, once the
        # scheduler has looked at it after several other changes).
        pending = await anext(calls[3].__aiter__())
        assert pending.status == pb.SCHEDULING

        # The state machine, illegal requests refused with the state that forbids them.
        second = pb.InstanceIdentifier(id=ids[1])
        await stub.Stop(second, metadata=md)
        await wait_status(server, ids[1], pb.STOPPED)
        await stub.Start(second, metadata=md)
        await wait_status(server, ids[1], pb.RUNNING)
        with pytest.raises(grpc.aio.AioRpcError) as again:
            await stub.Start(second, metadata=md)
        assert again.value.code() is grpc.StatusCode.FAILED_PRECONDITION
        assert "RUNNING" in again.value.details()
        # Every write of that Stop and Start woke the scheduler, and a stopped instance keeps its
        # room: the fourth is still waiting.
        assert (await stored_instance(server, pending.id)).status == pb.SCHEDULING
        missing = await server.http.post(
            "/v1/scheduler/instances/no-such-id:destroy", json={}, headers=headers(token)
        )
        assert missing.status_code == 404

        # Room appears: the pending instance is placed at once.
        destroyed = await server.http.post(
            f"/v1/scheduler/instances/{ids[2]}:destroy", json={}, headers=headers(token)
        )
        assert destroyed.status_code == 200
        rest = await _statuses_until(calls[3], pb.RUNNING)
        assert _names(rest) == ["SCHEDULED", "STARTING", "RUNNING"]
        assert "agent-node" in rest[0].statusDescription
        await wait_status(server, ids[2], pb.TERMINATED)

        # The edge node crashes: after the grace period its instance moves on.
        await stub.Destroy(second, metadata=md)
        await wait_status(server, ids[1], pb.TERMINATED)
        edge.kill()
        moved = await _statuses_until(calls[0], pb.RUNNING)
        assert _names(moved) == ["SCHEDULING", "SCHEDULED", "STARTING", "RUNNING"]
        assert "edge-node" in moved[0].statusDescription
        failed = await stored_node(server, "edge-node")
        assert failed is not None and failed.status == pb.FAILED
        record = await stored_instance(server, ids[0])
        assert record.node == "agent-node"
        agent_subnet = ipaddress.ip_network(agent.subnet)
        assert ipaddress.ip_address(record.ip) in agent_subnet
        for call in calls:
            call.cancel()


async def _no_open_streams(server: Any) -> bool:
    return open_streams(server) == 0


def test_create_streams_over_ndjson_and_sse_and_status_takes_an_ndjson_body(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1, node_grace_seconds=0.3) as server:
            token = await server.login()
            body = {
                "name": "web",
                "uri": "docker://nginx:1.25",
                "ports": [{"source": 8080, "destination": 80}],
                "resource": {"limit": {"cpu": 1, "memory": 256, "disk": 1}},
            }
            for accept, prefix in (("application/x-ndjson", ""), ("text/event-stream", "data: ")):
                request = asyncio.ensure_future(
                    server.http.post(
                        "/v1/scheduler/instances",
                        json=body,
                        headers={**headers(token), "accept": accept},
                    )
                )
                running_one = await eventually(
                    lambda: _running_instance(server), what="an instance running"
                )
                await pb_grpc.InstanceServiceStub(server.channel).Destroy(
                    pb.InstanceIdentifier(id=running_one.id), metadata=bearer(token)
                )
                reply = await request
                assert reply.headers["content-type"].startswith(accept)
                results = [
                    json.loads(line[len(prefix) :])["result"]
                    for line in reply.text.splitlines()
                    if line.startswith(prefix) and line.strip()
                ]
                assert [r["status"] for r in results] == [
                    "SCHEDULING",
                    "SCHEDULED",
                    "STARTING",
                    "RUNNING",
                    "DESTROYING",
                    "TERMINATED",
                ]
                assert 0 < results[3]["resource"]["usage"]["memory"] <= 256  # a share of its limit

            registered = await server.http.post(
                "/v1/scheduler/nodes:register",
                json={"certificate": certificate("rest-node")},
                headers=headers(token),
            )
            assert registered.status_code == 200
            reports = [
                {"id": "rest-node", "status": "RUNNING", "resource": {"limit": {"cpu": c}}}
                for c in (1, 2, 3)
            ]
            reply = await server.http.post(
                "/v1/scheduler/nodes:status",
                content="".join(json.dumps(r) + "\n" for r in reports),
                headers={**headers(token), "content-type": "application/x-ndjson"},
            )
            assert reply.status_code == 200, reply.text
            node = await stored_node(server, "rest-node")
            assert node is not None and node.limit.cpu == 3 and not node.streaming
            # The stream ended and nothing more came: after the grace period the node is FAILED.
            await eventually(lambda: _node_failed(server, "rest-node"), what="rest-node failed")

    run(scenario())


async def _running_instance(server: Any) -> InstanceRecord | None:
    for record in await server.portico.store.list(INSTANCE):
        found = InstanceRecord.from_bytes(record.data)
        if found.status == pb.RUNNING:
            return found
    return None


async def _node_failed(server: Any, name: str) -> bool:
    node = await stored_node(server, name)
    return node is not None and node.status == pb.FAILED


def test_unregistering_moves_instances_elsewhere_or_fails_them(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1, node_grace_seconds=5) as server:
            token = await server.login()
            md = bearer(token)
            nodes = pb_grpc.NodeServiceStub(server.channel)
            stub = pb_grpc.InstanceServiceStub(server.channel)
            async with status_feed(server, token, "small", 2, 1024, 10):
                call = stub.Create(instance("db", cpu=2, memory=512, disk=5), metadata=md)
                first = await _statuses_until(call, pb.RUNNING)
                instance_id = first[0].id
                assert (await stored_instance(server, instance_id)).node == "small"
                reply = await nodes.Unregister(pb.NodeUnregisterRequest(id="small"), metadata=md)
                assert "1 rescheduled" in reply.description
                moved = await _statuses_until(call, pb.RUNNING)
                assert _names(moved)[0] == "SCHEDULING"
                assert (await stored_instance(server, instance_id)).node == "sim-node-1"
                reply = await nodes.Unregister(
                    pb.NodeUnregisterRequest(id="sim-node-1"), metadata=md
                )
                assert "1 failed" in reply.description
                last = await _statuses_until(call, pb.FAILED)
                assert "no other healthy node" in last[-1].statusDescription
                # The stream ended by itself at the final state.
                assert await anext(call.__aiter__(), None) is None

    run(scenario())


def test_streams_end_when_the_client_goes_away(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, **FAST) as server:
            token = await server.login()
            # The tasks alive before the streams: background jobs keep starting short ones,
            # so what must not outlive the streams is judged against this set, not a count.
            before = set(asyncio.all_tasks())
            stub = pb_grpc.InstanceServiceStub(server.channel)
            call = stub.Create(instance("waiting"), metadata=bearer(token))
            assert (await anext(call.__aiter__())).status == pb.SCHEDULING
            assert open_streams(server) == 1
            call.cancel()
            await eventually(lambda: _no_open_streams(server), what="every stream closed")

            async with (
                uvicorn_serving(server.portico.http_app) as address,
                httpx.AsyncClient(base_url=f"http://{address}", headers=headers(token)) as client,
            ):
                body = {
                    "name": "waiting-too",
                    "uri": "nginx",
                    "resource": {"limit": {"cpu": 1, "memory": 1, "disk": 1}},
                }
                async with client.stream("POST", "/v1/scheduler/instances", json=body) as reply:
                    first = json.loads(await anext(reply.aiter_lines()))
                    assert first["result"]["status"] == "SCHEDULING"
                    assert open_streams(server) == 1
                await eventually(lambda: _no_open_streams(server), what="every stream closed")
            # The instances live on; no task of those streams is left behind.
            assert len(await server.portico.store.list(INSTANCE)) == 2

            # Tasks started since (the streams' and the background jobs' short ones) all end,
            # but for the gRPC server's wait for its next call, which replaced the one that
            # took ours.
            started = {
                task
                for task in asyncio.all_tasks() - before
                if not task.done()
                and getattr(task.get_coro(), "__qualname__", "") != "AioServer._request_call"
            }

            async def settled() -> bool:
                return all(task.done() for task in started)

            await eventually(settled, what="every task started while the streams ran ends")

    run(scenario())
