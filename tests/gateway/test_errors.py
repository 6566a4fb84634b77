from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from app.gateway.errors import HTTP_STATUS_BY_CODE, GatewayError

from .conftest import run, serving
from .shelf import pb

CANONICAL = [
    (grpc.StatusCode.CANCELLED, 499),
    (grpc.StatusCode.UNKNOWN, 500),
    (grpc.StatusCode.INVALID_ARGUMENT, 400),
    (grpc.StatusCode.DEADLINE_EXCEEDED, 504),
    (grpc.StatusCode.NOT_FOUND, 404),
    (grpc.StatusCode.ALREADY_EXISTS, 409),
    (grpc.StatusCode.PERMISSION_DENIED, 403),
    (grpc.StatusCode.UNAUTHENTICATED, 401),
    (grpc.StatusCode.RESOURCE_EXHAUSTED, 429),
    (grpc.StatusCode.FAILED_PRECONDITION, 400),
    (grpc.StatusCode.ABORTED, 409),
    (grpc.StatusCode.OUT_OF_RANGE, 400),
    (grpc.StatusCode.UNIMPLEMENTED, 501),
    (grpc.StatusCode.INTERNAL, 500),
    (grpc.StatusCode.UNAVAILABLE, 503),
    (grpc.StatusCode.DATA_LOSS, 500),
]


def test_table_covers_every_code() -> None:
    assert set(HTTP_STATUS_BY_CODE) == set(grpc.StatusCode)
    assert len(CANONICAL) == 16


@pytest.mark.parametrize(("code", "status"), CANONICAL, ids=[c.name for c, _ in CANONICAL])
def test_code_maps_to_http_status_on_rest_and_survives_grpc(
    code: grpc.StatusCode, status: int
) -> None:
    async def check() -> None:
        async with serving() as served:
            body = {"code": code.value[0], "message": f"failing with {code.name}"}
            reply = await served.http.post("/v1/fail", json=body)
            assert reply.status_code == status
            assert reply.json() == {
                "code": code.value[0],
                "message": body["message"],
                "details": [],
            }
            assert ("www-authenticate" in reply.headers) == (status == 401)
            if status == 401:
                assert reply.headers["www-authenticate"] == "Bearer"
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await served.stub.Fail(pb.FailRequest(code=code.value[0], message=body["message"]))
            assert caught.value.code() is code
            assert caught.value.details() == body["message"]

    run(check())


def test_rich_details_reach_both_transports_identically() -> None:
    async def check() -> None:
        async with serving() as served:
            request = {"code": 3, "message": "bad name", "rich": True}
            reply = await served.http.post("/v1/fail", json=request)
            assert reply.status_code == 400
            assert reply.json()["details"] == [
                {
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "field_violations": [{"field": "name", "description": "too short"}],
                }
            ]
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await served.stub.Fail(pb.FailRequest(code=3, message="bad name", rich=True))
            status = rpc_status.from_call(caught.value)
            assert status is not None
            bad = error_details_pb2.BadRequest()
            status.details[0].Unpack(bad)
            assert bad.field_violations[0].field == "name"
            assert GatewayError.from_status(status).status_dict() == reply.json()

    run(check())


def test_unexpected_exception_is_internal_without_its_text_on_both_transports(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def check() -> None:
        async with serving() as served:
            reply = await served.http.post(
                "/v1/fail", json={"crash": True}, headers={"x-request-id": "req-42"}
            )
            assert reply.status_code == 500
            assert reply.json() == {"code": 13, "message": "internal error", "details": []}
            assert "secret" not in reply.text
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await served.stub.Fail(pb.FailRequest(crash=True))
            assert caught.value.code() is grpc.StatusCode.INTERNAL
            assert caught.value.details() == "internal error"

    run(check())
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == 2
    assert "req-42" in logged[0].getMessage()


def test_set_code_without_abort_is_the_same_failure_on_both_transports() -> None:
    async def check() -> None:
        async with serving() as served:
            request = {"code": 6, "message": "exists already", "via_set_code": True}
            reply = await served.http.post("/v1/fail", json=request)
            assert (reply.status_code, reply.json()["message"]) == (409, "exists already")
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await served.stub.Fail(
                    pb.FailRequest(code=6, message="exists already", via_set_code=True)
                )
            assert caught.value.code() is grpc.StatusCode.ALREADY_EXISTS

    run(check())


def test_retry_info_detail_becomes_a_retry_after_header() -> None:
    from google.protobuf import any_pb2, duration_pb2

    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=7, nanos=1)))
    error = GatewayError(grpc.StatusCode.RESOURCE_EXHAUSTED, "slow down", [detail])
    assert ("retry-after", "8") in error.headers


def test_a_given_www_authenticate_challenge_is_kept() -> None:
    challenge = ("www-authenticate", 'Bearer error="invalid_token"')
    error = GatewayError(grpc.StatusCode.UNAUTHENTICATED, "expired", headers=[challenge])
    assert [h for h in error.headers if h[0] == "www-authenticate"] == [challenge]
    assert ("www-authenticate", "Bearer") in GatewayError(
        grpc.StatusCode.UNAUTHENTICATED, "x"
    ).headers
