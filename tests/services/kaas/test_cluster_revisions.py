"""Cluster reads carry their revision (ETag over REST, etag metadata over gRPC); deletes take
If-Match."""

from __future__ import annotations

import grpc
import pytest

from gen.cnct.kaas.api import api_pb2, api_pb2_grpc
from tests.harness import run, running
from tests.services.kaas.clusters import cluster_body, rest_api


def test_get_cluster_revalidates_and_a_stale_delete_is_412(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            status, _ = await api.call("POST", "/api/v1/cluster", json=cluster_body(workers=1))
            assert status == 200
            got = await api.http.get(
                "/api/v1/cluster", params={"name": "prod"}, headers=api.headers
            )
            etag = got.headers["etag"]
            assert got.headers["cache-control"] == "no-cache"
            conditional = {**api.headers, "if-none-match": etag}
            again = await api.http.get(
                "/api/v1/cluster", params={"name": "prod"}, headers=conditional
            )
            # 304 unless the reconciler moved the cluster on meanwhile (then a new ETag).
            assert again.status_code == 304 or again.headers["etag"] != etag
            listed = await api.http.get("/api/v1/cluster/list", headers=api.headers)
            assert listed.headers["etag"]
            stale = await api.http.delete(
                "/api/v1/cluster",
                params={"name": "prod"},
                headers={**api.headers, "if-match": '"stale"'},
            )
            assert stale.status_code == 412
            assert "is at revision" in stale.json()["message"]
            _, body = await api.call("GET", "/api/v1/cluster", params={"name": "prod"})
            assert body["cluster"]["status"] != "STOPPING"

            stub = api_pb2_grpc.ClusterStub(server.channel)
            call = stub.GetCluster(api_pb2.GetClusterMsg(name="prod"), metadata=server_auth(api))
            current = dict(await call.initial_metadata())["etag"]
            assert current.strip('"').isdigit()
            await call
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await stub.DeleteCluster(
                    api_pb2.DeleteClusterMsg(name="prod"),
                    metadata=(*server_auth(api), ("if-match", '"1"')),
                )
            assert failed.value.code() is grpc.StatusCode.FAILED_PRECONDITION

    run(scenario())


def server_auth(api) -> tuple[tuple[str, str], ...]:
    return (("authorization", api.headers["authorization"]),)


async def _revalidates(api, path: str, params: dict) -> str:
    """The reply's ETag, the same when read again, and a 304 with no body while it holds."""
    first = await api.http.get(path, params=params, headers=api.headers)
    assert first.status_code == 200, first.text
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "no-cache"
    second = await api.http.get(path, params=params, headers=api.headers)
    assert second.headers["etag"] == etag
    again = await api.http.get(path, params=params, headers={**api.headers, "if-none-match": etag})
    assert (again.status_code, again.content) == (304, b"")
    return str(etag)


async def _changed(api, path: str, params: dict, etag: str) -> dict:
    """After a write: the old ETag no longer holds (a whole reply with a new one)."""
    reply = await api.http.get(path, params=params, headers={**api.headers, "if-none-match": etag})
    assert reply.status_code == 200, reply.text
    assert reply.headers["etag"] != etag
    return dict(reply.json())


NODES = ("/api/v1/cluster/nodesstatus", {"clusterName": "prod"})
UPGRADE = ("/api/v1/cluster/upgrade", {"name": "prod"})


def test_nodes_status_and_upgrade_information_revalidate_until_the_cluster_changes(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            status, _ = await api.call("POST", "/api/v1/cluster", json=cluster_body(workers=1))
            assert status == 200
            await api.wait_for("prod", "RUNNING")  # settled: nothing changes by itself now
            nodes = await _revalidates(api, *NODES)
            upgrade = await _revalidates(api, *UPGRADE)

            stub = api_pb2_grpc.ClusterStub(server.channel)
            call = stub.GetClusterNodesStatus(
                api_pb2.GetClusterNodesStatusMsg(clusterName="prod"), metadata=server_auth(api)
            )
            assert dict(await call.initial_metadata())["etag"] == nodes
            assert len((await call).machines) == 2
            call = stub.GetUpgradeClusterInformation(
                api_pb2.GetUpgradeClusterInformationMsg(name="prod"), metadata=server_auth(api)
            )
            assert dict(await call.initial_metadata())["etag"] == upgrade
            assert list((await call).versions) == ["1.32.0"]

            # Another client scales the workers: the spec changes at once, machines follow.
            status, _ = await api.call(
                "PUT",
                "/api/v1/cluster/pool",
                json={"clusterName": "prod", "node_pools": [{"name": "workers", "count": 2}]},
            )
            assert status == 200
            await _changed(api, *NODES, nodes)
            await _changed(api, *UPGRADE, upgrade)
            await api.wait_for("prod", "RUNNING")
            scaled = await _revalidates(api, *NODES)
            assert (await _changed(api, *NODES, nodes))["count"] == 3

            # An upgrade: the spec changes at once, the machines one by one after it.
            upgrade = await _revalidates(api, *UPGRADE)
            status, _ = await api.call(
                "PUT", "/api/v1/cluster/upgrade", json={"name": "prod", "version": "1.32.0"}
            )
            assert status == 200
            assert (await _changed(api, *UPGRADE, upgrade)) == {"ok": False, "versions": []}
            await api.wait_for("prod", "RUNNING")
            upgraded = await _changed(api, *NODES, scaled)
            assert {m["k8sVersion"] for m in upgraded["machines"]} == {"1.32.0"}

    run(scenario())
