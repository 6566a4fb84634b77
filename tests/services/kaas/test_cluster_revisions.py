"""Cluster reads carry their revision (ETag over REST, etag metadata over gRPC); deletes take
If-Match."""

from __future__ import annotations

import grpc
import pytest

from gen.cnct.kaas.api import api_pb2, api_pb2_grpc
from tests.harness import run, running
from tests.services.kaas.test_cluster_service import _body, _rest


def test_get_cluster_revalidates_and_a_stale_delete_is_412(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await _rest(server)
            status, _ = await api.call("POST", "/api/v1/cluster", json=_body(workers=1))
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
