"""Item: invalid values are never stored. A cloudlet latitude NaN, Infinity or 999; an enum number
the enum does not define; 3.9, 4294967299 or 2**40 for an enum: each is a 400 (INVALID_ARGUMENT
over gRPC) naming the field, and nothing is created."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from app.settings import limits
from gen.edgeproto import cloudlet_pb2, cloudlet_pb2_grpc, notice_pb2, notice_pb2_grpc, operator_pb2
from tests.harness import Running, run, running

OPERATOR = {"name": "Acme Telecom"}
KEY = {"operator_key": OPERATOR, "name": "berlin-1"}


async def _create_cloudlet(server: Running, headers: dict, body: dict) -> tuple[int, Any]:
    reply = await server.http.post("/create/cloudlet", json=body, headers=headers)
    if reply.headers.get("content-type") == "application/x-ndjson":
        return reply.status_code, [json.loads(line) for line in reply.text.splitlines()]
    return reply.status_code, reply.json()


async def _cloudlets(server: Running, headers: dict) -> list[Any]:
    reply = await server.http.post("/show/cloudlet", json={}, headers=headers)
    assert reply.status_code == 200
    return [json.loads(line) for line in reply.text.splitlines()]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"location": {"latitude": "NaN", "longitude": 13.4}}, "location.latitude"),
        ({"location": {"latitude": "Infinity", "longitude": 13.4}}, "location.latitude"),
        ({"location": {"latitude": 999, "longitude": 13.4}}, "location.latitude"),
        ({"location": {"latitude": 52.5, "longitude": -181}}, "location.longitude"),
        ({"ip_support": 77}, "ip_support"),
        ({"ip_support": "77"}, "ip_support"),
        ({"ip_support": 3.9}, "ip_support"),
        ({"ip_support": 4294967299}, "ip_support"),
        ({"ip_support": 2**40}, "ip_support"),
        ({"ip_support": True}, "ip_support"),
        ({"num_dynamic_ips": 3.9}, "num_dynamic_ips"),
        ({"num_dynamic_ips": 2**40}, "num_dynamic_ips"),
    ],
)
def test_invalid_numbers_are_refused_over_rest(tmp_path: Path, change: dict, field: str) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server:
            headers = {"authorization": f"Bearer {await server.login()}"}
            assert (
                await server.http.post("/create/operator", json={"key": OPERATOR}, headers=headers)
            ).status_code == 200
            status, error = await _create_cloudlet(server, headers, {"key": KEY, **change})
            assert status == 400, error
            assert error["code"] == 3
            fields = [v["field"] for v in error["details"][0]["field_violations"]]
            assert field in fields, error
            assert await _cloudlets(server, headers) == []
            # The same cloudlet with good values is created.
            good = {"key": KEY, "location": {"latitude": 52.5, "longitude": 13.4}, "ip_support": 1}
            status, lines = await _create_cloudlet(server, headers, good)
            assert status == 200 and "error" not in lines[-1], lines

    run(scenario())


def test_invalid_numbers_are_refused_over_grpc(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            metadata = (("authorization", f"Bearer {token}"),)
            headers = {"authorization": f"Bearer {token}"}
            await server.http.post("/create/operator", json={"key": OPERATOR}, headers=headers)
            stub = cloudlet_pb2_grpc.CloudletApiStub(server.channel)
            key = cloudlet_pb2.CloudletKey(
                operator_key=operator_pb2.OperatorKey(name=OPERATOR["name"]), name="berlin-1"
            )
            bad = [
                (cloudlet_pb2.Cloudlet(key=key, ip_support=77), "ip_support"),  # type: ignore[arg-type]
                (cloudlet_pb2.Cloudlet(key=key, location={"latitude": float("nan")}), "latitude"),
                (cloudlet_pb2.Cloudlet(key=key, location={"longitude": float("inf")}), "longitude"),
            ]
            for cloudlet, field in bad:
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    async for _ in stub.CreateCloudlet(cloudlet, metadata=metadata):
                        pass
                assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
                assert field in (refused.value.details() or "")
            assert await _cloudlets(server, headers) == []

    run(scenario())


def test_each_message_of_a_grpc_client_stream_is_checked(tmp_path: Path) -> None:
    # A client stream's messages are parsed as the servicer reads them; each passes the checks a
    # single request passes, so a repeated field over the cap is refused before any servicer
    # walks it.
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            stub = notice_pb2_grpc.NotifyApiStub(server.channel)
            too_many = limits.MAX_REPEATED_ELEMENTS + 1

            async def notices() -> AsyncIterator[notice_pb2.Notice]:
                yield notice_pb2.Notice(version=1, want_objs=["Cloudlet"] * too_many)

            call = stub.StreamNotice(notices(), metadata=(("authorization", f"Bearer {token}"),))
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                async for _ in call:
                    pass
            assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            assert f"want_objs: has {too_many} elements" in (refused.value.details() or "")

    run(scenario())
