"""Item: every gRPC error fits a default client's metadata limit (~16 KB). A 9 KB
``k8s_version`` or many invalid pools once answered RESOURCE_EXHAUSTED "received metadata size
exceeds hard limit" instead of the INVALID_ARGUMENT they deserve."""

from __future__ import annotations

from pathlib import Path

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from app.settings import limits
from gen.cnct.kaas.api import api_pb2, api_pb2_grpc
from tests.harness import run, running


def test_a_refused_status_over_grpc_is_small_enough_for_a_default_client(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            stub = api_pb2_grpc.ClusterStub(server.channel)
            msg = api_pb2.CreateClusterMsg(name="c", k8s_version="9" * 9000)
            msg.worker_node_pools.extend(
                api_pb2.MachineSpec(name=f"Pool_{i}" + "x" * 200, instanceType="y" * 500)
                for i in range(limits.MAX_WORKER_POOLS)
            )
            try:
                await stub.CreateCluster(msg, metadata=[("authorization", f"Bearer {token}")])
            except grpc.aio.AioRpcError as error:
                assert error.code() is grpc.StatusCode.INVALID_ARGUMENT, error.details()
                status = rpc_status.from_call(error)
                assert status is not None
                assert limits.metadata_bytes(status) <= 8 * 1024
                found = error_details_pb2.BadRequest()
                status.details[0].Unpack(found)
                assert 0 < len(found.field_violations) <= limits.MAX_VIOLATIONS
            else:
                raise AssertionError("accepted")

    run(scenario())
