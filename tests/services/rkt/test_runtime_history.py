"""The runtime API's history, over REST and gRPC: events replay only since the API service
started, while pods and logs keep what happened before."""

from __future__ import annotations

import asyncio
import json
import time

import gen  # noqa: F401
from tests.harness import run, running
from tests.services.kudo.world import bearer, headers, instance, wait_status

from scheduler import scheduler_pb2 as pb
from scheduler import scheduler_pb2_grpc as pb_grpc
from v1alpha import api_pb2 as rkt
from v1alpha import api_pb2_grpc as rkt_grpc


def test_since_time_replays_only_events_since_the_service_started(tmp_path):
    async def scenario() -> None:
        before = int(time.time()) - 5
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            stub = pb_grpc.InstanceServiceStub(server.channel)
            call = stub.Create(instance("web", id="web-1"), metadata=bearer(token))
            await anext(call.__aiter__())
            call.cancel()
            await wait_status(server, "web-1", pb.RUNNING)

        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            until = int(time.time()) + 2
            wanted = rkt.EventFilter(ids=["web-1"], since_time=before, until_time=until)
            api = rkt_grpc.PublicAPIStub(server.channel)
            stub = pb_grpc.InstanceServiceStub(server.channel)

            async def over_grpc() -> list[str]:
                stream = api.ListenEvents(
                    rkt.ListenEventsRequest(filter=wanted), metadata=bearer(token)
                )
                return [rkt.EventType.Name(e.type) async for r in stream for e in r.events]

            async def over_rest() -> list[str]:
                reply = await server.http.post(
                    "/v1/runtime/events:listen",
                    json={"filter": {"ids": ["web-1"], "since_time": before, "until_time": until}},
                    headers=headers(token),
                )
                assert reply.status_code == 200, reply.text
                lines = [json.loads(line) for line in reply.text.splitlines()]
                return [e["type"] for line in lines for e in line["result"]["events"]]

            streams = asyncio.gather(over_grpc(), over_rest())
            await asyncio.sleep(0.2)  # both streams listen before the change
            await stub.Stop(pb.InstanceIdentifier(id="web-1"), metadata=bearer(token))
            await wait_status(server, "web-1", pb.STOPPED)
            for seen in await streams:
                # What happened before this start is not replayed; what happens now is sent.
                assert "EVENT_TYPE_POD_STARTED" not in seen, seen
                assert "EVENT_TYPE_POD_EXITED" in seen, seen
            # The earlier history is still there in the pod itself.
            pod = (await server.http.get("/v1/runtime/pods/web-1", headers=headers(token))).json()
            assert int(pod["pod"]["started_at"]) // 1_000_000_000 >= before

    run(scenario())
