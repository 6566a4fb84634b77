"""gRPC reflection as grpcurl uses it (list, describe, call), over v1 and v1alpha, and the
``x-request-id`` every gRPC response carries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from grpc_reflection.v1alpha import reflection_pb2 as pb

from tests.gateway.wire import frame, frames
from tests.harness import ADMIN_PASSWORD, Running, run, running

VERSIONS = ("grpc.reflection.v1", "grpc.reflection.v1alpha")


async def reflect(
    channel: grpc.aio.Channel, version: str, requests: Sequence[pb.ServerReflectionRequest]
) -> list[pb.ServerReflectionResponse]:
    """One ServerReflectionInfo stream of ``version`` (the two share their wire format)."""
    call = channel.stream_stream(
        f"/{version}.ServerReflection/ServerReflectionInfo",
        request_serializer=pb.ServerReflectionRequest.SerializeToString,
        response_deserializer=pb.ServerReflectionResponse.FromString,
    )
    return [reply async for reply in call(iter(requests))]


def pool_from(replies: Sequence[pb.ServerReflectionResponse]) -> descriptor_pool.DescriptorPool:
    """A descriptor pool of every file the replies carried, as a reflection client builds it."""
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for reply in replies:
        for data in reply.file_descriptor_response.file_descriptor_proto:
            proto = descriptor_pb2.FileDescriptorProto.FromString(data)
            files[proto.name] = proto
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str) -> None:
        if name not in added:
            for dependency in files[name].dependency:
                add(dependency)
            pool.Add(files[name])
            added.add(name)

    for name in files:
        add(name)
    return pool


async def dynamic_call(
    served: Running, version: str, method: str, body: dict[str, Any], token: str = ""
) -> tuple[dict[str, Any], dict[str, str]]:
    """Describe ``method`` (``pkg.Service.Method``) by reflection alone, then call it with a
    request built from that description: what ``grpcurl -d '{...}' host pkg.Service/Method``
    does. Returns the JSON reply and the initial metadata."""
    [reply] = await reflect(served.channel, version, [symbol(method)])
    assert reply.WhichOneof("message_response") == "file_descriptor_response", reply
    pool = pool_from([reply])
    found = pool.FindMethodByName(method)
    request_class = message_factory.GetMessageClass(found.input_type)
    reply_class = message_factory.GetMessageClass(found.output_type)
    call = served.channel.unary_unary(
        f"/{found.containing_service.full_name}/{found.name}",
        request_serializer=request_class.SerializeToString,
        response_deserializer=reply_class.FromString,
    )
    metadata = [("authorization", f"Bearer {token}")] if token else []
    pending = call(json_format.ParseDict(body, request_class()), metadata=metadata)
    answer = await pending
    initial = {k: v for k, v in (await pending.initial_metadata() or ())}
    return json_format.MessageToDict(answer), initial


def symbol(name: str) -> pb.ServerReflectionRequest:
    return pb.ServerReflectionRequest(file_containing_symbol=name)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_service_and_method_resolves_by_symbol(tmp_path: Path, version: str) -> None:
    async def check() -> None:
        async with running(tmp_path) as served:
            registry = served.portico.registry
            [listed] = await reflect(
                served.channel, version, [pb.ServerReflectionRequest(list_services="")]
            )
            names = {s.name for s in listed.list_services_response.service}
            assert {s.full_name for s in registry.services} <= names
            assert {f"{v}.ServerReflection" for v in VERSIONS} <= names
            assert "grpc.health.v1.Health" in names

            symbols = [
                *(s.full_name for s in registry.services),
                *(m.full_name for m in registry),
                *(m.descriptor.input_type.full_name for m in registry),
                "grpc.health.v1.Health.Check",
                *(f"{v}.ServerReflection.ServerReflectionInfo" for v in VERSIONS),
            ]
            replies = await reflect(served.channel, version, [symbol(s) for s in symbols])
            errors = [
                r.original_request.file_containing_symbol
                for r in replies
                if r.error_response.error_code
            ]
            assert errors == []
            pool = pool_from(replies)
            for method in registry:
                described = pool.FindMethodByName(method.full_name)
                assert described.input_type.full_name == method.descriptor.input_type.full_name
                assert described.client_streaming == method.client_streaming

            [missing] = await reflect(served.channel, version, [symbol("no.such.Service.Method")])
            assert missing.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]

            # google.api.http, the extension every method's options carry
            options = "google.protobuf.MethodOptions"
            extension, numbers = await reflect(
                served.channel,
                version,
                [
                    pb.ServerReflectionRequest(
                        file_containing_extension=pb.ExtensionRequest(
                            containing_type=options, extension_number=72295728
                        )
                    ),
                    pb.ServerReflectionRequest(all_extension_numbers_of_type=options),
                ],
            )
            assert pool_from([extension]).FindFileByName("google/api/annotations.proto")
            assert 72295728 in numbers.all_extension_numbers_response.extension_number

    run(check())


@pytest.mark.parametrize("version", VERSIONS)
def test_a_call_built_from_reflection_alone_works(tmp_path: Path, version: str) -> None:
    async def check() -> None:
        async with running(tmp_path) as served:
            login, _ = await dynamic_call(
                served,
                version,
                "services.auth.AuthService.Login",
                {"username": "admin", "password": ADMIN_PASSWORD},
            )
            listed, initial = await dynamic_call(
                served, version, "cnct.kaas.api.Cluster.GetClusterList", {}, login["token"]
            )
            assert listed["ok"] is True
            assert len(initial["x-request-id"]) == 32

    run(check())


def test_every_grpc_response_carries_the_request_id(tmp_path: Path) -> None:
    async def check() -> None:
        async with running(tmp_path) as served:
            login = served.channel.unary_unary(
                "/services.auth.AuthService/Login",
                request_serializer=lambda data: data,
                response_deserializer=lambda data: data,
            )
            # A refusal (no token) carries the caller's id; a call without one gets a fresh id.
            listing = served.channel.unary_stream(
                "/edgeproto.FlavorApi/ShowFlavor",
                request_serializer=lambda data: data,
                response_deserializer=lambda data: data,
            )
            refused = listing(b"", metadata=[("x-request-id", "trace-7")])
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in refused:
                    pass
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
            # In the trailers: grpcio at times loses a refused stream's initial metadata.
            assert dict(caught.value.trailing_metadata())["x-request-id"] == "trace-7"

            bad = login(b"\x0a\x02ab", metadata=[("x-request-id", "x" * 200)])
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await bad
            own = dict(await bad.initial_metadata())["x-request-id"]
            assert len(own) == 32 and own != "x" * 200

            token = await served.login()
            stream = listing(b"", metadata=[("authorization", f"Bearer {token}")])
            async for _ in stream:  # the stream ends cleanly
                pass
            assert len(dict(await stream.initial_metadata())["x-request-id"]) == 32

    run(check())


@pytest.mark.parametrize("version", VERSIONS)
def test_reflection_on_the_http_port(tmp_path: Path, version: str) -> None:
    """The HTTP port serves reflection too (native gRPC under pyvoy, Connect here): each version
    is answered in its own message classes (v1 requests once reached v1alpha's answers, which
    refused them: INTERNAL)."""

    async def check() -> None:
        async with running(tmp_path) as served:
            asked = [pb.ServerReflectionRequest(list_services=""), symbol("edgeproto.FlavorApi")]
            reply = await served.http.post(
                f"/{version}.ServerReflection/ServerReflectionInfo",
                content=b"".join(frame(r.SerializeToString()) for r in asked),
                headers={"content-type": "application/connect+proto"},
            )
            assert reply.status_code == 200, reply.text
            *messages, (end_flags, end) = frames(reply.content)
            assert end_flags == 2 and json.loads(end) == {}
            listed, described = (pb.ServerReflectionResponse.FromString(m) for _, m in messages)
            assert f"{version}.ServerReflection" in {
                s.name for s in listed.list_services_response.service
            }
            assert listed.original_request == asked[0]
            assert pool_from([described]).FindServiceByName("edgeproto.FlavorApi")

    run(check())
