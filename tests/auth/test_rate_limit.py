"""Per-caller rate limits on every transport: a bucket per account (per address when
anonymous), 429 + Retry-After on REST, RESOURCE_EXHAUSTED + RetryInfo on gRPC, Connect and
gRPC-Web, counted in metrics, and one limit for every process on the store."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from prometheus_client import REGISTRY as METRICS

from app.main import Portico
from app.settings.config import ConfigurationError, Settings
from gen.cnct.kaas.api import api_pb2 as cluster_pb2
from tests.gateway.wire import frame, frames
from tests.harness import run, running, settings_for

VERSION_REST = "/api/v1/version"
VERSION = "/cnct.kaas.api.Cluster/GetVersionInformation"
CHECK_TOKEN_REST = "/v1/auth:checkToken"
# A limit nobody refills within a test (one call in 100 s), after a burst of three; logins
# are left unlimited, so the tests can sign in as often as they need.
LIMITED = {
    "rate_limit_per_second": 0.01,
    "rate_limit_burst": 3,
    "rate_limit_methods": ("services.auth.AuthService/Login=0",),
}


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def _retry_delay(details: Any) -> int:
    """The seconds of the RetryInfo among a status's packed details (fails without one)."""
    for detail in details:
        info = error_details_pb2.RetryInfo()
        if detail.Unpack(info):
            return int(info.retry_delay.seconds)
    raise AssertionError(f"no RetryInfo in {details!r}")


def _limited_count(method: str, caller: str) -> float:
    labels = {"method": method, "caller": caller}
    return METRICS.get_sample_value("portico_rate_limited_total", labels) or 0.0


def test_rest_answers_429_with_retry_after_per_account(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, **LIMITED) as server:
            admin = _bearer(await server.login())
            viewer = _bearer(await server.add_account("viewer1", "viewer"))
            before = _limited_count("cnct.kaas.api.Cluster.GetVersionInformation", "account")
            for _ in range(3):
                assert (await server.http.get(VERSION_REST, headers=admin)).status_code == 200
            refused = await server.http.get(VERSION_REST, headers=admin)
            assert refused.status_code == 429, refused.text
            # The bucket refills one call in 100 s: that is when the next one is allowed.
            assert 90 <= int(refused.headers["retry-after"]) <= 100
            body = refused.json()
            assert body["code"] == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
            assert "rate limit" in body["message"]
            assert any(d["@type"].endswith("google.rpc.RetryInfo") for d in body["details"])
            after = _limited_count("cnct.kaas.api.Cluster.GetVersionInformation", "account")
            assert after == before + 1
            # Another account has a bucket of its own.
            assert (await server.http.get(VERSION_REST, headers=viewer)).status_code == 200

    run(scenario())


def test_grpc_answers_resource_exhausted_with_retry_info(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, **LIMITED) as server:
            metadata = tuple(_bearer(await server.login()).items())
            stub = server.channel.unary_unary(
                VERSION,
                request_serializer=cluster_pb2.GetVersionMsg.SerializeToString,
                response_deserializer=cluster_pb2.GetVersionReply.FromString,
            )
            for _ in range(3):
                await stub(cluster_pb2.GetVersionMsg(), metadata=metadata)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub(cluster_pb2.GetVersionMsg(), metadata=metadata)
            assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            status = rpc_status.from_call(refused.value)
            assert status is not None and 90 <= _retry_delay(status.details) <= 100
            # The same account over REST shares the bucket the gRPC calls emptied.
            rest = await server.http.get(VERSION_REST, headers=dict(metadata))
            assert rest.status_code == 429

    run(scenario())


def test_connect_and_grpc_web_carry_the_retry_info(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, **LIMITED) as server:
            auth = _bearer(await server.login())
            connect = {"content-type": "application/json", **auth}
            for _ in range(3):
                ok = await server.http.post("/api" + VERSION, content=b"{}", headers=connect)
                assert ok.status_code == 200, ok.text
            refused = await server.http.post("/api" + VERSION, content=b"{}", headers=connect)
            assert refused.status_code == 429
            body = refused.json()
            assert body["code"] == "resource_exhausted"
            (detail,) = body["details"]
            assert detail["type"] == "google.rpc.RetryInfo"
            info = error_details_pb2.RetryInfo.FromString(
                base64.b64decode(detail["value"] + "=" * (-len(detail["value"]) % 4))
            )
            assert 90 <= info.retry_delay.seconds <= 100

            web = await server.http.post(
                "/api" + VERSION,
                content=frame(b""),
                headers={"content-type": "application/grpc-web+proto", **auth},
            )
            ((flags, trailer),) = frames(web.content)
            assert flags == 0x80 and b"grpc-status: 8" in trailer
            fields = dict(
                line.split(": ", 1) for line in trailer.decode().strip().split("\r\n") if line
            )
            packed = fields["grpc-status-details-bin"]
            status = status_pb2.Status.FromString(
                base64.b64decode(packed + "=" * (-len(packed) % 4))
            )
            assert 90 <= _retry_delay(status.details) <= 100

    run(scenario())


def test_anonymous_calls_count_by_client_address(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, **LIMITED) as server:
            check = {"token": "not-a-token"}
            for _ in range(3):
                ok = await server.http.post(CHECK_TOKEN_REST, json=check)
                assert ok.status_code == 200, ok.text
            refused = await server.http.post(CHECK_TOKEN_REST, json=check)
            assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
            assert _limited_count("services.auth.AuthService.CheckToken", "address") >= 1
            # A signed-in account calling from that address is not held by its bucket.
            token = await server.login()
            assert (await server.http.get(VERSION_REST, headers=_bearer(token))).status_code == 200

    run(scenario())


def test_a_method_limit_gives_the_method_a_bucket_of_its_own(tmp_path: Path) -> None:
    async def scenario() -> None:
        limits = {"rate_limit_methods": ("cnct.kaas.api.Cluster/GetVersionInformation=0.01:1",)}
        async with running(tmp_path, **limits) as server:
            auth = _bearer(await server.login())
            assert (await server.http.get(VERSION_REST, headers=auth)).status_code == 200
            assert (await server.http.get(VERSION_REST, headers=auth)).status_code == 429
            # Every other method is unlimited: no common rate was set.
            for _ in range(20):
                listed = await server.http.get("/api/v1/cluster/list", headers=auth)
                assert listed.status_code == 200

    run(scenario())


def test_the_limit_is_shared_by_two_servers_on_one_store(tmp_path: Path) -> None:
    async def scenario() -> None:
        limits = {**LIMITED, "rate_limit_burst": 4}
        async with running(tmp_path, **limits) as one, running(tmp_path, **limits) as two:
            auth = _bearer(await one.login())
            for server in (one, two, one, two):
                assert (await server.http.get(VERSION_REST, headers=auth)).status_code == 200
            # Four calls spent the burst, two on each: neither server admits a fifth.
            assert (await one.http.get(VERSION_REST, headers=auth)).status_code == 429
            assert (await two.http.get(VERSION_REST, headers=auth)).status_code == 429

    run(scenario())


def test_without_the_settings_nothing_is_limited(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server:
            assert server.portico.gate is not None and server.portico.gate.limiter is None
            auth = _bearer(await server.login())
            for _ in range(120):
                reply = await server.http.get(VERSION_REST, headers=auth)
                assert reply.status_code == 200 and "retry-after" not in reply.headers

    run(scenario())


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"rate_limit_per_second": -1.0}, "PORTICO_RATE_LIMIT_PER_SECOND: -1"),
        ({"rate_limit_burst": 5}, "PORTICO_RATE_LIMIT_BURST: needs a rate"),
        ({"rate_limit_methods": ("Cluster=5",)}, "PORTICO_RATE_LIMIT_METHODS: 'Cluster=5'"),
        ({"rate_limit_methods": ("a.B/C=1:0",)}, "PORTICO_RATE_LIMIT_METHODS: 'a.B/C=1:0'"),
        (
            {"rate_limit_methods": ("a.B/C=1", "a.B/C=2")},
            "PORTICO_RATE_LIMIT_METHODS: 'a.B/C=2' is not allowed; allowed: one entry per method",
        ),
    ],
)
def test_bad_settings_are_refused_naming_the_variable(changes: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigurationError, match=said.replace("(", r"\(")):
        Settings(**changes)


def test_settings_read_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "PORTICO_RATE_LIMIT_PER_SECOND": "2.5",
            "PORTICO_RATE_LIMIT_METHODS": "cnct.kaas.api.Cluster/CreateCluster=1:5, a.B/C=0",
        }
    )
    default, methods = settings.rate_limits()
    assert default == (2.5, 3)  # the burst is one second of the rate, rounded up
    assert methods == {"cnct.kaas.api.Cluster.CreateCluster": (1.0, 5), "a.B.C": (0.0, 1)}


def test_serve_refuses_a_method_it_does_not_serve(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, rate_limit_methods=("cnct.kaas.api.Cluster/CreateClustre=1",))
    with pytest.raises(ConfigurationError) as refused:
        run(Portico(settings).start())
    assert str(refused.value) == (
        "PORTICO_RATE_LIMIT_METHODS: cnct.kaas.api.Cluster/CreateClustre is not a served method "
        "(did you mean cnct.kaas.api.Cluster/CreateCluster?)"
    )
