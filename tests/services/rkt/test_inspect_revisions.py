"""The runtime's pods and images (Inspect and List) name what they were made of in their ETag
(REST) and ``etag`` metadata (gRPC): a client revalidates with If-None-Match and gets 304 until
an input changes, the pod's node's state included."""

from __future__ import annotations

import time

import httpx

from app.services.kudo.images import parse_reference
from app.services.kudo.records import NODE
from gen.scheduler import scheduler_pb2 as pb
from gen.scheduler import scheduler_pb2_grpc as pb_grpc
from gen.v1alpha import api_pb2 as rkt
from gen.v1alpha import api_pb2_grpc as rkt_grpc
from tests.harness import Running, eventually, run, running
from tests.services.kudo.world import (
    ETCD,
    NGINX,
    bearer,
    headers,
    running_instance,
    status_feed,
    stored_node,
    wait_status,
)

NGINX_ID = parse_reference(NGINX).id


async def _revalidates(http: httpx.AsyncClient, path: str, auth: dict[str, str]) -> str:
    """The reply's ETag, the same when read again, and a 304 with no body while it holds."""
    first = await http.get(path, headers=auth)
    assert first.status_code == 200, first.text
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "no-cache"
    assert (await http.get(path, headers=auth)).headers["etag"] == etag
    again = await http.get(path, headers={**auth, "if-none-match": etag})
    assert (again.status_code, again.content) == (304, b"")
    return str(etag)


async def _changed(http: httpx.AsyncClient, path: str, auth: dict[str, str], etag: str) -> dict:
    """The old ETag no longer holds: a whole reply with a new one."""
    reply = await http.get(path, headers={**auth, "if-none-match": etag})
    assert reply.status_code == 200, reply.text
    assert reply.headers["etag"] != etag
    return dict(reply.json())


def _notes(pod: dict) -> dict[str, str]:
    return {kv["Key"]: kv["value"] for kv in pod["annotations"]}


async def _node_revision(server: Running, node: str) -> int:
    assert server.portico.store is not None
    record = await server.portico.store.get(NODE, node)
    assert record is not None
    return record.revision


def test_a_pods_etag_holds_while_its_node_reports_and_changes_with_the_nodes_state(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=0, node_grace_seconds=0.3) as server:
            token = await server.login()
            auth = headers(token)
            async with status_feed(server, token, "edge-a", 2, 1024, 10) as feed:
                web = await running_instance(server, token, "web", NGINX)
                path = f"/v1/runtime/pods/{web}"
                etag = await _revalidates(server.http, path, auth)
                api = rkt_grpc.PublicAPIStub(server.channel)
                call = api.InspectPod(rkt.InspectPodRequest(id=web), metadata=bearer(token))
                assert dict(await call.initial_metadata())["etag"] == etag
                assert (await call).pod.id == web

                # The node's reports rewrite its record (the time of the latest), not its
                # state: the pod is the same, and so is its tag.
                reported = await _node_revision(server, "edge-a")

                async def reported_again() -> bool:
                    return await _node_revision(server, "edge-a") > reported

                await eventually(reported_again, what="edge-a's record rewritten by a report")
                still = await server.http.get(path, headers={**auth, "if-none-match": etag})
                assert still.status_code == 304

                # The node says it is stopping: no longer ready, which the pod shows.
                feed.status = pb.STOPPING

                async def not_ready() -> bool:
                    node = await stored_node(server, "edge-a")
                    return node is not None and not node.healthy

                await eventually(not_ready, what="edge-a not ready")
                pod = (await _changed(server.http, path, auth, etag))["pod"]
                assert _notes(pod)["scheduler/node-state"] == "NOT_READY"
                assert pod["state"] == "POD_STATE_RUNNING"  # the instance itself is unchanged

    run(scenario())


def test_an_images_etag_changes_with_the_instances_that_ran_it(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            auth = headers(token)
            await running_instance(server, token, "web", NGINX)
            path = f"/v1/runtime/images/{NGINX_ID}"
            etag = await _revalidates(server.http, path, auth)
            api = rkt_grpc.PublicAPIStub(server.channel)
            call = api.InspectImage(rkt.InspectImageRequest(id=NGINX_ID), metadata=bearer(token))
            assert dict(await call.initial_metadata())["etag"] == etag
            assert (await call).image.id == NGINX_ID

            # A pod of another image is no input of this one.
            await running_instance(server, token, "cache", ETCD)
            still = await server.http.get(path, headers={**auth, "if-none-match": etag})
            assert still.status_code == 304

            # Another pod of this image is.
            await running_instance(server, token, "web-2", NGINX)
            image = (await _changed(server.http, path, auth, etag))["image"]
            assert image["id"] == NGINX_ID

    run(scenario())


def test_a_pods_etag_changes_when_its_images_retention_ends(tmp_path):
    # Nothing is written when an unused image's retention ends, but a pod whose image was
    # imported before it was placed then shows its own placement as the import instead.
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1, image_retention_seconds=1.0) as server:
            token = await server.login()
            auth = headers(token)
            first = await running_instance(server, token, "web", NGINX)
            imported = int(time.time())

            async def next_second() -> bool:
                return int(time.time()) > imported

            await eventually(next_second, what="a second after the import")
            later = await running_instance(server, token, "web-2", NGINX)
            stub = pb_grpc.InstanceServiceStub(server.channel)
            for pod in (first, later):
                await stub.Destroy(pb.InstanceIdentifier(id=pod), metadata=bearer(token))
                await wait_status(server, pod, pb.TERMINATED)
            path = f"/v1/runtime/pods/{later}"
            shown = await server.http.get(path, headers=auth)
            before = shown.json()["pod"]["apps"][0]["image"]["import_timestamp"]

            async def image_removed() -> bool:
                reply = await server.http.get(f"/v1/runtime/images/{NGINX_ID}", headers=auth)
                return reply.status_code == 404

            await eventually(image_removed, what="the image's retention ended")
            pod = (await _changed(server.http, path, auth, shown.headers["etag"]))["pod"]
            assert pod["apps"][0]["image"]["import_timestamp"] != before

    run(scenario())


async def _listed(http: httpx.AsyncClient, path: str, auth: dict[str, str]) -> str:
    """The list's ETag, and a 304 with no body while it holds."""
    first = await http.post(path, json={"detail": True}, headers=auth)
    assert first.status_code == 200, first.text
    etag = str(first.headers["etag"])
    again = await http.post(path, json={"detail": True}, headers={**auth, "if-none-match": etag})
    assert (again.status_code, again.content) == (304, b"")
    return etag


def test_pod_and_image_lists_revalidate_until_a_pod_comes(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=1) as server:
            token = await server.login()
            auth = headers(token)
            await running_instance(server, token, "web", NGINX)
            pods = await _listed(server.http, "/v1/runtime/pods:list", auth)
            images = await _listed(server.http, "/v1/runtime/images:list", auth)
            api = rkt_grpc.PublicAPIStub(server.channel)
            call = api.ListPods(rkt.ListPodsRequest(detail=True), metadata=bearer(token))
            assert dict(await call.initial_metadata())["etag"] == pods
            assert len((await call).pods) == 1

            await running_instance(server, token, "cache", ETCD)
            for path, etag, field in (
                ("/v1/runtime/pods:list", pods, "pods"),
                ("/v1/runtime/images:list", images, "images"),
            ):
                asked = {**auth, "if-none-match": etag}
                reply = await server.http.post(path, json={"detail": True}, headers=asked)
                assert reply.status_code == 200 and reply.headers["etag"] != etag
                assert len(reply.json()[field]) == 2

    run(scenario())
