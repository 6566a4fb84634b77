"""Item 7: bytes that are no protobuf message are INVALID_ARGUMENT, logged as one line at most."""

from __future__ import annotations

import logging

import grpc

from tests.harness import run, running

MALFORMED = b"\xff\xff\xff\xff\x0f"  # field 0, wire type 7: no message starts like this


def _identity(data: bytes) -> bytes:
    return data


def test_a_malformed_request_is_invalid_argument_with_one_log_line(tmp_path, caplog):
    async def call_three_times() -> list[grpc.aio.AioRpcError]:
        async with running(tmp_path) as server:
            token = await server.login()
            metadata = (("authorization", f"Bearer {token}"),)
            unary = server.channel.unary_unary(
                "/cnct.kaas.api.Cluster/GetCluster",
                request_serializer=_identity,
                response_deserializer=_identity,
            )
            listing = server.channel.unary_stream(
                "/v1alpha.PublicAPI/ListenEvents",
                request_serializer=_identity,
                response_deserializer=_identity,
            )
            streamed = server.channel.stream_unary(
                "/scheduler.NodeService/Status",
                request_serializer=_identity,
                response_deserializer=_identity,
            )
            errors = []
            caplog.clear()
            for attempt in (
                unary(MALFORMED, metadata=metadata),
                _drain(listing(MALFORMED, metadata=metadata)),
                streamed(iter([MALFORMED]), metadata=metadata),
            ):
                try:
                    await attempt
                except grpc.aio.AioRpcError as error:
                    errors.append(error)
            return errors

    with caplog.at_level(logging.DEBUG):
        errors = run(call_three_times())
    assert [e.code() for e in errors] == [grpc.StatusCode.INVALID_ARGUMENT] * 3
    assert "not a valid serialized cnct.kaas.api.GetClusterMsg" in errors[0].details()
    assert "not a valid serialized scheduler.NodeStatus" in errors[2].details()
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) <= 3, [r.getMessage() for r in lines]
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in lines)


def test_a_malformed_request_from_an_anonymous_caller_is_still_unauthenticated(tmp_path):
    async def call() -> grpc.StatusCode:
        async with running(tmp_path) as server:
            unary = server.channel.unary_unary(
                "/cnct.kaas.api.Cluster/GetCluster",
                request_serializer=_identity,
                response_deserializer=_identity,
            )
            try:
                await unary(MALFORMED)
            except grpc.aio.AioRpcError as error:
                return error.code()
            return grpc.StatusCode.OK

    assert run(call()) is grpc.StatusCode.UNAUTHENTICATED


async def _drain(call: grpc.aio.UnaryStreamCall) -> None:
    async for _ in call:
        pass
