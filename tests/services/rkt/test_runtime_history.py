"""The runtime API's history, over REST and gRPC: events replay only since the API service
started, while pods and logs keep what happened before."""

from __future__ import annotations

import asyncio
import json
import re
import time

from gen.scheduler import scheduler_pb2 as pb
from gen.scheduler import scheduler_pb2_grpc as pb_grpc
from gen.v1alpha import api_pb2 as rkt
from gen.v1alpha import api_pb2_grpc as rkt_grpc
from tests.harness import eventually, run, running
from tests.services.kudo.world import bearer, headers, instance, wait_status
from tests.services.rkt.listening import listening, stream_starts


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

            starts = stream_starts(server)
            streams = asyncio.gather(over_grpc(), over_rest())
            await listening(starts, 2)  # both streams listen before the change
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


NGINX_ACCESS = re.compile(
    r'^\d+\.\d+\.\d+\.\d+ - - \[[^]]+\] "(GET|POST) \S+ HTTP/1\.1" \d{3} \d+ '
)


def _split(line: str) -> tuple[str, str]:
    """(timestamp, text after the ``app[node]:`` prefix)."""
    stamp, rest = line.split(" ", 1)
    return stamp, rest.split("]: ", 1)[1]


def _is_lifecycle(text: str) -> bool:
    return text.split(":")[0] in pb.Status.DESCRIPTOR.values_by_name


def test_logs_interleave_the_apps_seeded_output_with_its_lifecycle(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            stub = pb_grpc.InstanceServiceStub(server.channel)
            for name, uri in (("web", "docker://nginx:1.25"), ("cache", "redis:7.4")):
                call = stub.Create(instance(name, id=name, uri=uri), metadata=bearer(token))
                await anext(call.__aiter__())
                call.cancel()
                await wait_status(server, name, pb.RUNNING)
            api = rkt_grpc.PublicAPIStub(server.channel)

            # Following: the app writes on its own, with no state change.
            follow = api.GetLogs(
                rkt.GetLogsRequest(pod_id="web", follow=True), metadata=bearer(token)
            )
            reader = follow.__aiter__()
            first = [_split(line) for line in (await anext(reader)).lines]
            assert [t for _, t in first if _is_lifecycle(t)][-1].startswith("RUNNING")
            written: list[tuple[str, str]] = []
            while len(written) < 3:
                written += [
                    _split(line) for line in (await asyncio.wait_for(anext(reader), 5)).lines
                ]
            follow.cancel()
            assert all(NGINX_ACCESS.match(text) for _, text in written), written

            await stub.Stop(pb.InstanceIdentifier(id="web"), metadata=bearer(token))
            await wait_status(server, "web", pb.STOPPED)
            until = int(time.time()) + 1

            async def past() -> bool:
                return int(time.time()) >= until

            await eventually(past, what="the window below wholly in the past")
            params = {"until_time": until}
            auth = headers(token)
            reply = await server.http.get("/v1/runtime/pods/web/logs", params=params, headers=auth)
            lines = [_split(line) for line in json.loads(reply.text)["result"]["lines"]]
            texts = [text for _, text in lines]
            assert [stamp for stamp, _ in lines] == sorted(stamp for stamp, _ in lines)
            stopped = next(i for i, t in enumerate(texts) if t.startswith("STOPPED"))
            running_at = next(i for i, t in enumerate(texts) if t.startswith("RUNNING"))
            app = [t for t in texts[running_at + 1 : stopped] if not _is_lifecycle(t)]
            assert len(app) >= 3 and all(NGINX_ACCESS.match(t) for t in app)
            # Nothing is written once the app stopped; the same window reads the same (seeded).
            assert all(_is_lifecycle(t) for t in texts[stopped:])
            again = await server.http.get("/v1/runtime/pods/web/logs", params=params, headers=auth)
            assert again.text == reply.text
            last = await api.GetLogs(
                rkt.GetLogsRequest(pod_id="web", lines=3, until_time=until), metadata=bearer(token)
            ).read()
            assert [_split(line)[1] for line in last.lines] == texts[-3:]

            # Another image, another style: redis's own log lines.
            cache = await api.GetLogs(
                rkt.GetLogsRequest(pod_id="cache"), metadata=bearer(token)
            ).read()
            output = [t for _, t in map(_split, cache.lines) if not _is_lifecycle(t)]
            assert output and all(re.match(r"^1:M \d\d \w{3} \d{4} [\d:.]+ \* ", t) for t in output)

    run(scenario())


def test_unused_images_are_removed_after_the_retention_with_an_event(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1, image_retention_seconds=0.5) as server:
            token = await server.login()
            auth = headers(token)
            stub = pb_grpc.InstanceServiceStub(server.channel)
            api = rkt_grpc.PublicAPIStub(server.channel)

            async def start(instance_id: str, uri: str) -> None:
                call = stub.Create(
                    instance(instance_id, id=instance_id, uri=uri), metadata=bearer(token)
                )
                await anext(call.__aiter__())
                call.cancel()
                await wait_status(server, instance_id, pb.RUNNING)

            async def images() -> dict[str, dict]:
                reply = await server.http.post("/v1/runtime/images:list", json={}, headers=auth)
                return {image["name"]: image for image in reply.json()["images"]}

            await start("web", "docker://nginx:1.25")
            await start("db", "redis:7.4")
            listed = await images()
            assert 60 * 2**20 < int(listed["nginx"]["size"]) < 75 * 2**20
            assert 40 * 2**20 < int(listed["redis"]["size"]) < 50 * 2**20
            labels = {kv["Key"]: kv["value"] for kv in listed["nginx"]["labels"]}
            assert labels == {"version": "1.25", "os": "linux", "arch": "amd64"}

            kinds = [rkt.EVENT_TYPE_IMAGE_REMOVED, rkt.EVENT_TYPE_IMAGE_IMPORTED]
            starts = stream_starts(server)
            live = api.ListenEvents(
                rkt.ListenEventsRequest(filter=rkt.EventFilter(types=kinds)),
                metadata=bearer(token),
            )
            reader = live.__aiter__()
            await listening(starts)  # before the change
            since = int(time.time())
            destroyed = time.monotonic()
            await stub.Destroy(pb.InstanceIdentifier(id="web"), metadata=bearer(token))
            removed = await asyncio.wait_for(anext(reader), 5)
            assert time.monotonic() - destroyed >= 0.5  # not before the retention ended
            assert [(rkt.EventType.Name(e.type), getattr(e, "from")) for e in removed.events] == [
                ("EVENT_TYPE_IMAGE_REMOVED", "nginx")
            ]
            assert set(await images()) == {"redis"}  # the image in use stays
            nginx = removed.events[0].id
            gone = await api.ListImages(rkt.ListImagesRequest(), metadata=bearer(token))
            assert [i.name for i in gone.images] == ["redis"]
            assert gone.images[0].size == int(listed["redis"]["size"])  # the same on gRPC
            missing = await server.http.get(f"/v1/runtime/images/{nginx}", headers=auth)
            assert missing.status_code == 404

            # Used again: imported again. The REST replay shows both events in order.
            await start("web-2", "docker://nginx:1.25")
            again = await asyncio.wait_for(anext(reader), 5)
            assert [rkt.EventType.Name(e.type) for e in again.events] == [
                "EVENT_TYPE_IMAGE_IMPORTED"
            ]
            live.cancel()
            body = {
                "filter": {
                    "ids": [nginx],
                    "since_time": since,
                    "until_time": int(time.time()) + 1,
                }
            }
            reply = await server.http.post("/v1/runtime/events:listen", json=body, headers=auth)
            replayed = [
                e["type"]
                for line in reply.text.splitlines()
                for e in json.loads(line)["result"]["events"]
            ]
            # (``since`` is in whole seconds: the first import may fall into it too.)
            assert replayed[-2:] == ["EVENT_TYPE_IMAGE_REMOVED", "EVENT_TYPE_IMAGE_IMPORTED"]

    run(scenario())
