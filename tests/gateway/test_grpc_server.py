from __future__ import annotations

from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from .conftest import run, serving
from .shelf import SERVICE, pb


def test_reflection_lists_the_registry_services_and_health() -> None:
    async def check() -> Any:
        async with serving() as served:
            stub = reflection_pb2_grpc.ServerReflectionStub(served.channel)
            request = reflection_pb2.ServerReflectionRequest(list_services="")
            async for reply in stub.ServerReflectionInfo(iter([request])):
                return {s.name for s in reply.list_services_response.service}

    names = run(check())
    assert {SERVICE, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= names


def test_health_reports_serving() -> None:
    async def check() -> Any:
        async with serving() as served:
            stub = health_pb2_grpc.HealthStub(served.channel)
            overall = await stub.Check(health_pb2.HealthCheckRequest(service=""))
            shelf = await stub.Check(health_pb2.HealthCheckRequest(service=SERVICE))
            return overall.status, shelf.status

    assert run(check()) == (health_pb2.HealthCheckResponse.SERVING,) * 2


def test_context_over_grpc_sees_metadata_deadline_and_peer() -> None:
    async def check() -> Any:
        async with serving() as served:
            call = served.stub.InspectContext(
                pb.InspectContextRequest(), metadata=[("tenant", "acme")], timeout=5
            )
            report = await call
            initial = await call.initial_metadata()
            trailing = await call.trailing_metadata()
            return report, dict(initial), dict(trailing)

    report, initial, trailing = run(check())
    assert report.metadata["tenant"] == "acme"
    assert report.has_deadline and 4 < report.time_remaining < 5.1  # grpc rounds up
    assert report.peer.startswith("ipv4:127.0.0.1:")
    assert initial["x-initial"] == "yes"
    assert trailing["x-trailing"] == "done"


def test_deadline_exceeded_on_both_transports() -> None:
    async def check() -> Any:
        async with serving() as served:
            rest = await served.http.get(
                "/v1/shelves/s/things",
                params={"count": 10, "delay_ms": 200},
                headers={"grpc-timeout": "100m"},
            )
            try:
                async for _ in served.stub.ListThings(
                    pb.ListThingsRequest(parent="s", count=10, delay_ms=200), timeout=0.1
                ):
                    pass
            except grpc.aio.AioRpcError as exc:
                return rest, exc.code()
            return rest, None

    rest, code = run(check())
    assert code is grpc.StatusCode.DEADLINE_EXCEEDED
    assert rest.status_code == 504
    assert rest.json()["code"] == 4
