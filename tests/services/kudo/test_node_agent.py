"""``portico node-agent`` follows its node's pods through the runtime API and reports what they
use; a node account sees only its own node's pods, over REST and gRPC."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from app.services.kudo.instances import running_usage
from app.services.kudo.placement import Capacity
from app.sim.usage import WINDOW_SECONDS, usage_at
from gen.scheduler import scheduler_pb2 as pb
from gen.scheduler import scheduler_pb2_grpc as pb_grpc
from gen.v1alpha import api_pb2 as rkt
from gen.v1alpha import api_pb2_grpc as rkt_grpc
from tests.harness import Running, run, running
from tests.services.kudo.world import (
    bearer,
    eventually,
    headers,
    instance,
    node_agent,
    status_feed,
    stored_instance,
    stored_node,
    wait_status,
)


def test_usage_is_a_seeded_share_of_the_limits_that_varies_over_time():
    limit = (4, 1024, 20)
    readings = {usage_at("pod-1", limit, w * WINDOW_SECONDS) for w in range(50)}
    assert len(readings) > 10  # it moves from window to window
    for cpu, memory, disk in readings:
        assert 1 <= cpu <= 4 and 410 <= memory <= 820 and 4 <= disk <= 8
    assert usage_at("pod-1", limit, 12.0) == usage_at("pod-1", limit, 12.0)  # seeded


def test_the_agent_reports_what_its_nodes_pods_use(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=0, node_grace_seconds=0.3) as server:
            token = await server.login()
            stub = pb_grpc.InstanceServiceStub(server.channel)
            async with node_agent(server, tmp_path / "certs", "agent-node", 4, 4096, 40):
                ids = []
                for name, cpu in (("api", 1), ("worker", 2)):
                    call = stub.Create(
                        instance(name, cpu=cpu, memory=512, disk=4), metadata=bearer(token)
                    )
                    ids.append((await anext(call.__aiter__())).id)
                    call.cancel()
                for instance_id in ids:
                    await wait_status(server, instance_id, pb.RUNNING)

                async def matches() -> bool:
                    node = await stored_node(server, "agent-node")
                    total = Capacity()
                    for instance_id in ids:
                        record = await stored_instance(server, instance_id)
                        total = total + running_usage(instance_id, record.limit, time.time())
                    return node is not None and node.usage == total and total.cpu > 0

                # The node's summary is the sum of its instances' (time-varying) usage.
                await eventually(matches, timeout=10)

                # Stopped: no longer running, no longer counted.
                await stub.Stop(pb.InstanceIdentifier(id=ids[1]), metadata=bearer(token))
                await wait_status(server, ids[1], pb.STOPPED)
                only_first = ids[:1]

                async def matches_first() -> bool:
                    node = await stored_node(server, "agent-node")
                    record = await stored_instance(server, only_first[0])
                    expected = running_usage(only_first[0], record.limit, time.time())
                    return node is not None and node.usage == expected

                await eventually(matches_first, timeout=10)

    run(scenario())


@contextlib.asynccontextmanager
async def two_nodes_one_pod_each(server: Running, admin: str) -> AsyncIterator[dict[str, str]]:
    """Nodes ``edge-1`` and ``edge-2`` reporting, with one running pod each; yields the pod id
    by node."""
    stub = pb_grpc.InstanceServiceStub(server.channel)
    async with (
        status_feed(server, admin, "edge-1", 1, 1024, 10),
        status_feed(server, admin, "edge-2", 1, 1024, 10),
    ):
        placed = {}
        for name in ("first", "second"):
            call = stub.Create(instance(name, cpu=1), metadata=bearer(admin))
            instance_id = (await anext(call.__aiter__())).id
            call.cancel()
            record = await wait_status(server, instance_id, pb.RUNNING)
            placed[record.node] = instance_id
        assert set(placed) == {"edge-1", "edge-2"}
        yield placed


def test_a_node_account_sees_only_its_own_nodes_pods(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=0, node_grace_seconds=0.3) as server:
            admin = await server.login()
            edge = await server.add_account("edge-1", "node")
            async with two_nodes_one_pod_each(server, admin) as placed:
                api = rkt_grpc.PublicAPIStub(server.channel)
                seen = await api.ListPods(rkt.ListPodsRequest(), metadata=bearer(edge))
                assert [pod.id for pod in seen.pods] == [placed["edge-1"]]
                listed = await server.http.post(
                    "/v1/runtime/pods:list", json={}, headers=headers(edge)
                )
                assert [pod["id"] for pod in listed.json()["pods"]] == [placed["edge-1"]]
                other = await server.http.get(
                    f"/v1/runtime/pods/{placed['edge-2']}", headers=headers(edge)
                )
                assert other.status_code == 404
                everyone = await server.http.post(
                    "/v1/runtime/pods:list", json={}, headers=headers(admin)
                )
                assert len(everyone.json()["pods"]) == 2
                # Still no instance control for a node account.
                refused = await server.http.post(
                    f"/v1/scheduler/instances/{placed['edge-1']}:stop",
                    json={},
                    headers=headers(edge),
                )
                assert refused.status_code == 403

    run(scenario())


def test_event_streams_opening_together_each_see_their_own_callers_pods(tmp_path):
    """Streams that open together share one read of where they start: a node account's stream
    still replays only its own node's pods, and an admin's beside it every pod."""

    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=0, node_grace_seconds=0.3) as server:
            admin = await server.login()
            edge = await server.add_account("edge-1", "node")
            since = int(time.time())
            async with two_nodes_one_pod_each(server, admin) as placed:
                store = server.portico.store
                assert store is not None
                real_read = store.current_revision

                async def slow_read() -> int:
                    await asyncio.sleep(0.3)  # a slow database: the other stream opens meanwhile
                    return await real_read()

                store.current_revision = slow_read  # type: ignore[method-assign]
                api = rkt_grpc.PublicAPIStub(server.channel)
                wanted = rkt.EventFilter(since_time=since, types=[rkt.EVENT_TYPE_POD_STARTED])
                request = rkt.ListenEventsRequest(filter=wanted)
                # The node's stream first: the read they share is not to be seen through its eyes.
                streams = [
                    api.ListenEvents(request, metadata=bearer(token)) for token in (edge, admin)
                ]
                first = [await asyncio.wait_for(anext(s.__aiter__()), 10) for s in streams]
                for stream in streams:
                    stream.cancel()
                assert [e.id for e in first[0].events] == [placed["edge-1"]]
                assert {e.id for e in first[1].events} == set(placed.values())

    run(scenario())
