"""``/descriptors.binpb``: the FileDescriptorSet of what the gateway serves, for tools that need
the schema as a file (``buf curl --schema``, ``grpcurl -protoset``, code generators)."""

from __future__ import annotations

import grpc
import httpx
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool

from app.cli.codegen import DESCRIPTOR_SET, GEN
from app.gateway.descriptor_set import file_set
from app.gateway.errors import GatewayError
from app.gateway.registry import Registry
from app.gateway.routes import GatewayOptions, create_app
from tests.harness import run

REGISTRY = Registry.from_package("gen")


async def _refuse_everyone(method: object, metadata: object, peer: object) -> object:
    raise GatewayError(grpc.StatusCode.UNAUTHENTICATED, "no token")


def _get(options: GatewayOptions, method: str = "GET") -> httpx.Response:
    app = create_app(REGISTRY, {}, options)

    async def fetch() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://portico") as client:
            return await client.request(method, "/descriptors.binpb")

    return run(fetch())


def _parsed(payload: bytes) -> descriptor_pb2.FileDescriptorSet:
    return descriptor_pb2.FileDescriptorSet.FromString(payload)


def test_served_without_a_token_while_every_call_needs_one() -> None:
    options = GatewayOptions(
        authenticate=_refuse_everyone, descriptor_sets=(GEN / DESCRIPTOR_SET).read_bytes()
    )
    reply = _get(options)
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/x-protobuf"
    assert _get(options, "HEAD").status_code == 200
    names = [file.name for file in _parsed(reply.content).file]
    assert "services/auth/auth.proto" in names and "edgeproto/app.proto" in names
    assert "google/rpc/error_details.proto" in names  # what an error's details are


def test_every_served_method_resolves_in_a_pool_built_file_by_file() -> None:
    # grpcurl and buf build their pool in the set's order: each file after its imports.
    pool = descriptor_pool.DescriptorPool()
    for file in _parsed(file_set(REGISTRY)).file:
        pool.Add(file)
    for method in REGISTRY:
        found = pool.FindMethodByName(method.full_name)
        assert found.input_type.full_name == method.descriptor.input_type.full_name
    assert pool.FindMessageTypeByName("google.rpc.BadRequest")


def test_the_given_sets_copies_are_served_with_their_comments() -> None:
    given = (GEN / DESCRIPTOR_SET).read_bytes()
    served = {f.name: f for f in _parsed(file_set(REGISTRY, given)).file}
    assert served["services/auth/auth.proto"].source_code_info.location  # comments for codegen
    without = {f.name: f for f in _parsed(file_set(REGISTRY)).file}
    assert not without["services/auth/auth.proto"].source_code_info.location
    assert set(served) == set(without)


@pytest.mark.parametrize("only", [{"stats.StatsService"}, {"services.auth.AuthService"}])
def test_only_the_served_services_files_and_their_imports(only: set[str]) -> None:
    narrowed = Registry([s.descriptor.file for s in REGISTRY.services], only=only)
    given = (GEN / DESCRIPTOR_SET).read_bytes()
    names = {f.name for f in _parsed(file_set(narrowed, given)).file}
    assert "edgeproto/app.proto" not in names
    pool = descriptor_pool.DescriptorPool()
    for file in _parsed(file_set(narrowed, given)).file:
        pool.Add(file)
    assert {pool.FindServiceByName(name).full_name for name in only} == only
