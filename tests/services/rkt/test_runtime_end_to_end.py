"""The runtime API end to end, over REST and gRPC: the scheduler's instances as pods and images,
events as they happen (filtered, with since/until), logs with follow, GetInfo, and a failed
node's state on its pods."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format

from app.services.kudo.images import parse_reference
from gen.scheduler import scheduler_pb2 as pb
from gen.scheduler import scheduler_pb2_grpc as pb_grpc
from gen.v1alpha import api_pb2 as rkt
from gen.v1alpha import api_pb2_grpc as rkt_grpc
from tests.harness import Running, run, running, uvicorn_serving
from tests.services.kudo.world import (
    ETCD,
    NGINX,
    bearer,
    eventually,
    headers,
    open_streams,
    running_instance,
    status_feed,
    stored_node,
    wait_status,
)
from tests.services.rkt.listening import listening, stream_starts


def _pods(reply: httpx.Response) -> dict[str, Any]:
    assert reply.status_code == 200, reply.text
    return {pod["id"]: pod for pod in reply.json()["pods"]}


def test_instances_on_nodes_are_pods_with_their_images(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            web = await running_instance(server, token, "web", NGINX)
            cache = await running_instance(server, token, "cache", ETCD)
            waiting = await running_instance(server, token, "huge", NGINX, cpu=100)
            auth = headers(token)
            api = rkt_grpc.PublicAPIStub(server.channel)

            reduced = _pods(await server.http.post("/v1/runtime/pods:list", json={}, headers=auth))
            assert set(reduced) == {web, cache, waiting}
            # Never placed: a preparing pod whose node is "none"; the others show their node's.
            assert reduced[waiting]["state"] == "POD_STATE_PREPARING"
            notes = {
                pod: {kv["Key"]: kv["value"] for kv in reduced[pod]["annotations"]}
                for pod in (waiting, web)
            }
            assert notes[waiting]["scheduler/node"] == "none"
            assert notes[waiting]["scheduler/status"] == "SCHEDULING"
            assert notes[web]["scheduler/node"] == "sim-node-1"
            assert notes[web]["scheduler/node-state"] == "READY"
            unplaced = {"filters": [{"annotations": [{"Key": "scheduler/node", "value": "none"}]}]}
            found = await api.ListPods(
                json_format.ParseDict(unplaced, rkt.ListPodsRequest()), metadata=bearer(token)
            )
            assert [pod.id for pod in found.pods] == [waiting]
            assert reduced[web]["state"] == "POD_STATE_RUNNING"
            assert reduced[web]["apps"] == [] and reduced[web]["manifest"] == ""
            assert reduced[web]["networks"][0]["ipv4"].startswith("10.128.0.")
            assert reduced[web]["cgroup"].startswith("/machine.slice/machine-rkt")
            assert int(reduced[web]["started_at"]) >= int(reduced[web]["created_at"]) > 0

            listed = await api.ListPods(rkt.ListPodsRequest(detail=True), metadata=bearer(token))
            by_id = {pod.id: pod for pod in listed.pods}
            etcd = parse_reference(ETCD)
            assert by_id[cache].apps[0].name == "cache"
            assert by_id[cache].apps[0].image == rkt.Image(id=etcd.id)
            assert json.loads(by_id[cache].manifest)["apps"][0]["image"]["name"] == etcd.name

            # Filters: OR across filters, AND within one.
            either = {"filters": [{"app_names": ["web"]}, {"image_ids": [etcd.id]}]}
            both = _pods(await server.http.post("/v1/runtime/pods:list", json=either, headers=auth))
            assert set(both) == {web, cache}
            neither = {"filters": [{"app_names": ["web"], "states": ["POD_STATE_EXITED"]}]}
            none = _pods(
                await server.http.post("/v1/runtime/pods:list", json=neither, headers=auth)
            )
            assert none == {}
            sub = {"filters": [{"pod_sub_cgroups": [reduced[web]["cgroup"] + "/system.slice"]}]}
            assert set(
                _pods(await server.http.post("/v1/runtime/pods:list", json=sub, headers=auth))
            ) == {web}

            inspected = await server.http.get(f"/v1/runtime/pods/{web}", headers=auth)
            app = inspected.json()["pod"]["apps"][0]
            assert (app["image"]["name"], app["image"]["version"]) == ("nginx", "1.25")
            assert app["state"] == "APP_STATE_RUNNING"
            missing = await server.http.get("/v1/runtime/pods/no-such-pod", headers=auth)
            assert missing.status_code == 404

            images = await server.http.post("/v1/runtime/images:list", json={}, headers=auth)
            listed_images = {i["name"]: i for i in images.json()["images"]}
            assert set(listed_images) == {"nginx", "quay.io/coreos/etcd"}
            assert listed_images["quay.io/coreos/etcd"]["version"] == "v3.5"
            assert listed_images["nginx"]["base_format"]["type"] == "IMAGE_TYPE_DOCKER"
            assert listed_images["nginx"]["manifest"] == ""
            by_base = await api.ListImages(
                rkt.ListImagesRequest(filters=[rkt.ImageFilter(base_names=["etcd"])], detail=True),
                metadata=bearer(token),
            )
            assert [i.id for i in by_base.images] == [etcd.id]
            assert json.loads(by_base.images[0].manifest)["name"] == "quay.io/coreos/etcd"
            image = await api.InspectImage(
                rkt.InspectImageRequest(id=etcd.id), metadata=bearer(token)
            )
            assert image.image.import_timestamp > 0
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await api.InspectImage(
                    rkt.InspectImageRequest(id="sha512-0"), metadata=bearer(token)
                )
            assert error.value.code() is grpc.StatusCode.NOT_FOUND

            # A stopped instance is an exited pod: no network, its app exited cleanly.
            stub = pb_grpc.InstanceServiceStub(server.channel)
            await stub.Stop(pb.InstanceIdentifier(id=web), metadata=bearer(token))
            await wait_status(server, web, pb.STOPPED)
            pod = (await api.InspectPod(rkt.InspectPodRequest(id=web), metadata=bearer(token))).pod
            assert pod.state == rkt.POD_STATE_EXITED and not pod.networks and not pod.cgroup
            assert (pod.apps[0].state, pod.apps[0].exit_code) == (rkt.APP_STATE_EXITED, 0)

            info = (await server.http.get("/v1/runtime/info", headers=auth)).json()["info"]
            assert info["api_version"] == "1.0.0-alpha"
            assert info["global_flags"]["insecure_flags"] == "tls"  # served without TLS

    run(scenario())


def test_a_failed_nodes_state_shows_on_its_pods(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=0, node_grace_seconds=0.3) as server:
            token = await server.login()
            async with status_feed(server, token, "edge-a", 2, 1024, 10):
                web = await running_instance(server, token, "web", NGINX)
                api = rkt_grpc.PublicAPIStub(server.channel)
                pod = await api.InspectPod(rkt.InspectPodRequest(id=web), metadata=bearer(token))
                notes = {kv.Key: kv.value for kv in pod.pod.annotations}
                assert (notes["scheduler/node"], notes["scheduler/node-state"]) == (
                    "edge-a",
                    "READY",
                )

            # The node's stream ended and it stayed silent: FAILED, and its pod says so.
            async def failed() -> bool:
                node = await stored_node(server, "edge-a")
                return node is not None and node.status == pb.FAILED

            await eventually(failed, what="node edge-a FAILED")
            await wait_status(server, web, pb.FAILED)  # no other node could take it
            listed = await api.ListPods(rkt.ListPodsRequest(), metadata=bearer(token))
            over_rest = await server.http.get(f"/v1/runtime/pods/{web}", headers=headers(token))
            assert over_rest.status_code == 200, over_rest.text
            for annotations in (
                [{"Key": kv.Key, "value": kv.value} for kv in listed.pods[0].annotations],
                over_rest.json()["pod"]["annotations"],
            ):
                notes = {kv["Key"]: kv["value"] for kv in annotations}
                assert notes["scheduler/node"] == "edge-a"
                assert notes["scheduler/node-state"] == "FAILED"
                assert notes["scheduler/status"] == "FAILED"
            assert over_rest.json()["pod"]["state"] == "POD_STATE_EXITED"

    run(scenario())


def _events(responses: list[rkt.ListenEventsResponse]) -> list[tuple[str, str]]:
    return [(rkt.EventType.Name(e.type), getattr(e, "from")) for r in responses for e in r.events]


def test_listen_events_sees_exactly_the_matching_events(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            md = bearer(token)
            started = int(time.time())
            web = await running_instance(server, token, "web", NGINX)
            cache = await running_instance(server, token, "cache", ETCD)
            api = rkt_grpc.PublicAPIStub(server.channel)
            wanted = rkt.EventFilter(
                ids=[web], types=[rkt.EVENT_TYPE_POD_EXITED, rkt.EVENT_TYPE_POD_STARTED]
            )
            starts = stream_starts(server)
            stream = api.ListenEvents(rkt.ListenEventsRequest(filter=wanted), metadata=md)
            stub = pb_grpc.InstanceServiceStub(server.channel)
            # The stream has read where it starts: it sees every later write.
            await listening(starts)
            for target, request, state in (
                (cache, stub.Stop, pb.STOPPED),  # another pod: not wanted
                (web, stub.Stop, pb.STOPPED),
                (cache, stub.Start, pb.RUNNING),
                (web, stub.Start, pb.RUNNING),
                (web, stub.Destroy, pb.TERMINATED),  # exits, then is garbage: only the exit
            ):
                await request(pb.InstanceIdentifier(id=target), metadata=md)
                await wait_status(server, target, state)
            seen: list[rkt.ListenEventsResponse] = []
            reader = stream.__aiter__()
            while len(_events(seen)) < 3:
                seen.append(await asyncio.wait_for(anext(reader), 5))
            assert _events(seen) == [
                ("EVENT_TYPE_POD_EXITED", "web"),
                ("EVENT_TYPE_POD_STARTED", "web"),
                ("EVENT_TYPE_POD_EXITED", "web"),
            ]
            assert {e.id for r in seen for e in r.events} == {web}
            stream.cancel()

            # Replayed from the stored transitions over REST; the stream closes at until_time.
            body = {
                "filter": {
                    "names": ["cache", "nginx"],
                    "types": ["EVENT_TYPE_APP_EXITED", "EVENT_TYPE_IMAGE_IMPORTED"],
                    "since_time": str(started),
                    "until_time": str(int(time.time()) + 1),
                }
            }
            reply = await server.http.post(
                "/v1/runtime/events:listen", json=body, headers=headers(token)
            )
            assert reply.status_code == 200
            events = [
                (e["type"], e["from"])
                for line in reply.text.splitlines()
                for e in json.loads(line)["result"]["events"]
            ]
            assert events == [
                ("EVENT_TYPE_IMAGE_IMPORTED", "nginx"),
                ("EVENT_TYPE_APP_EXITED", "cache"),
            ]
            await eventually(lambda: _closed(server), what="every stream closed")

    run(scenario())


async def _closed(server: Running) -> bool:
    return open_streams(server) == 0


def test_event_streams_starting_together_share_one_read_and_each_gets_every_event(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            web = await running_instance(server, token, "web", NGINX)
            store = server.portico.store
            assert store is not None
            reads = 0
            real_read = store.current_revision
            read_done = asyncio.Event()

            async def slow_read() -> int:
                nonlocal reads
                reads += 1
                await asyncio.sleep(0.3)  # a slow database: every stream starts meanwhile
                revision = await real_read()
                read_done.set()
                return revision

            store.current_revision = slow_read  # type: ignore[method-assign]
            api = rkt_grpc.PublicAPIStub(server.channel)
            wanted = rkt.EventFilter(ids=[web], types=[rkt.EVENT_TYPE_POD_EXITED])
            request = rkt.ListenEventsRequest(filter=wanted)
            streams = [api.ListenEvents(request, metadata=bearer(token)) for _ in range(20)]
            readers = [asyncio.ensure_future(anext(s.__aiter__())) for s in streams]
            await eventually(lambda: _all_open(server, 20), what="twenty streams open")
            # The shared read is done: every stream watches from its revision, so sees the Stop.
            await asyncio.wait_for(read_done.wait(), 5)
            stub = pb_grpc.InstanceServiceStub(server.channel)
            await stub.Stop(pb.InstanceIdentifier(id=web), metadata=bearer(token))
            replies = await asyncio.wait_for(asyncio.gather(*readers), 5)
            assert {_events([reply])[0] for reply in replies} == {("EVENT_TYPE_POD_EXITED", "web")}
            assert reads == 1
            for stream in streams:
                stream.cancel()

    run(scenario())


async def _all_open(server: Running, count: int) -> bool:
    return open_streams(server) >= count


def test_get_logs_returns_the_last_lines_and_follows_new_ones(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            md = bearer(token)
            web = await running_instance(server, token, "web", NGINX)
            auth = headers(token)
            everything = await server.http.get(f"/v1/runtime/pods/{web}/logs", headers=auth)
            lines = _lifecycle(json.loads(everything.text.splitlines()[0])["result"]["lines"])
            assert [line.split(": ")[1] for line in lines][-2:] == ["STARTING", "RUNNING"]
            other_app = await server.http.get(
                f"/v1/runtime/pods/{web}/logs", params={"app_name": "db"}, headers=auth
            )
            assert other_app.status_code == 404

            api = rkt_grpc.PublicAPIStub(server.channel)
            follow = api.GetLogs(rkt.GetLogsRequest(pod_id=web, follow=True), metadata=md)
            reader = follow.__aiter__()
            first = _lifecycle((await anext(reader)).lines)
            assert len(first) == 4 and "web[sim-node-1]: RUNNING" in first[-1]
            stub = pb_grpc.InstanceServiceStub(server.channel)
            await stub.Stop(pb.InstanceIdentifier(id=web), metadata=md)
            new: list[str] = []
            while len(new) < 2:
                new.extend(_lifecycle((await asyncio.wait_for(anext(reader), 5)).lines))
            assert [line.split(": ", 2)[1:] for line in new] == [
                ["STOPPING", "stop requested"],
                ["STOPPED", "container exited with code 0"],
            ]
            follow.cancel()

            # Over REST a follow ends when the pod is garbage-collected.
            request = asyncio.ensure_future(
                server.http.get(f"/v1/runtime/pods/{web}/logs?follow=true", headers=auth)
            )
            await eventually(lambda: _following(server), what="the stream following")
            await stub.Destroy(pb.InstanceIdentifier(id=web), metadata=md)
            reply = await request
            replies = [
                _lifecycle(json.loads(line)["result"]["lines"]) for line in reply.text.splitlines()
            ]
            assert len(replies[0]) == 6
            assert [line.split(": ")[1] for r in replies[1:] for line in r] == [
                "DESTROYING",
                "TERMINATED",
            ]
            await eventually(lambda: _closed(server), what="every stream closed")

    run(scenario())


def _lifecycle(lines: list[str]) -> list[str]:
    """The lifecycle lines (``...]: STATUS: why``) among the app's own output."""
    return [
        line
        for line in lines
        if line.split("]: ", 1)[1].split(":")[0] in pb.Status.DESCRIPTOR.values_by_name
    ]


async def _following(server: Running) -> bool:
    return open_streams(server) == 1


def test_event_and_log_streams_end_when_the_client_goes_away(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            web = await running_instance(server, token, "web", NGINX)
            api = rkt_grpc.PublicAPIStub(server.channel)
            events = api.ListenEvents(rkt.ListenEventsRequest(), metadata=bearer(token))
            await eventually(lambda: _following(server), what="the stream following")
            events.cancel()
            await eventually(lambda: _closed(server), what="every stream closed")
            async with (
                uvicorn_serving(server.portico.http_app) as address,
                httpx.AsyncClient(base_url=f"http://{address}", headers=headers(token)) as client,
            ):
                url = f"/v1/runtime/pods/{web}/logs"
                async with client.stream("GET", url, params={"follow": "true"}) as reply:
                    first = json.loads(await anext(reply.aiter_lines()))
                    assert len(_lifecycle(first["result"]["lines"])) == 4
                    assert open_streams(server) == 1
                await eventually(lambda: _closed(server), what="every stream closed")

    run(scenario())


def test_bad_runtime_requests_name_the_field(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=0) as server:
            auth = headers(await server.login())
            reply = await server.http.post(
                "/v1/runtime/events:listen",
                json={"filter": {"since_time": "20", "until_time": "10"}},
                headers=auth,
            )
            assert reply.status_code == 400
            assert reply.json()["details"][0]["field_violations"][0]["field"] == (
                "filter.until_time"
            )
            logs = await server.http.get("/v1/runtime/pods/x/logs?lines=-1", headers=auth)
            assert logs.status_code == 400

    run(scenario())


def test_the_demo_runs_pods_on_simulated_nodes(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, demo=True, sim_nodes=2) as server:
            api = rkt_grpc.PublicAPIStub(server.channel)
            md = bearer(await server.login())

            async def demo_pods() -> list[rkt.Pod]:
                pods = (await api.ListPods(rkt.ListPodsRequest(), metadata=md)).pods
                running_pods = [p for p in pods if p.state == rkt.POD_STATE_RUNNING]
                return running_pods if len(running_pods) == 2 else []

            pods = await eventually(demo_pods)
            nodes = {kv.value for p in pods for kv in p.annotations if kv.Key == "scheduler/node"}
            assert nodes <= {"sim-node-1", "sim-node-2"}

    run(scenario())
