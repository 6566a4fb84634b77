"""Native gRPC on the HTTP port of ``portico serve --server pyvoy``, called by grpcio: one port
for every protocol. Every call kind, metadata both ways, deadlines, gzip, error details,
idempotency keys, reflection and health, as the grpc.aio port answers them."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status

from gen.cnct.kaas.api import api_pb2
from gen.edgeproto import flavor_pb2, node_pb2, notice_pb2
from gen.scheduler import scheduler_pb2
from gen.services.auth import auth_pb2
from gen.v1alpha import api_pb2 as runtime_pb2
from tests.harness import ADMIN_PASSWORD, eventually, run
from tests.reliability.server import Server, start_server
from tests.services.kaas.clusters import cluster_body
from tests.services.kudo.world import certificate

pytestmark = pytest.mark.slow  # a server of its own: scheduled first (tests/conftest.py)

LOGIN = "/services.auth.AuthService/Login"
VERSION = "/cnct.kaas.api.Cluster/GetVersionInformation"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = start_server(Path(tmp_path_factory.mktemp("native")) / "data", server="pyvoy")
    try:
        started.wait_ready()
        yield started
    finally:
        started.stop()


def _method(channel: grpc.aio.Channel, path: str, reply: type) -> grpc.aio.UnaryUnaryMultiCallable:
    return channel.unary_unary(
        path, request_serializer=_serialize, response_deserializer=reply.FromString
    )


async def _token(channel: grpc.aio.Channel) -> tuple[tuple[str, str], ...]:
    login = _method(channel, LOGIN, auth_pb2.LoginResponse)
    reply = await login(auth_pb2.LoginRequest(username="admin", password=ADMIN_PASSWORD))
    return (("authorization", f"Bearer {reply.token}"),)


def _channel(server: Server) -> grpc.aio.Channel:
    assert server.grpc_port == server.http_port  # one port
    return grpc.aio.insecure_channel(f"127.0.0.1:{server.http_port}")


def test_unary_calls_carry_metadata_both_ways_and_gzip(server: Server) -> None:
    async def scenario() -> None:
        async with _channel(server) as channel:
            auth = await _token(channel)
            version = _method(channel, VERSION, api_pb2.GetVersionReply)
            call = version(api_pb2.GetVersionMsg(), metadata=(*auth, ("x-request-id", "mine-1")))
            reply = await call
            assert reply.ok and reply.version_information.git_version
            assert ("x-request-id", "mine-1") in tuple(await call.initial_metadata())
            create = _method(
                channel, "/cnct.kaas.api.Cluster/CreateCluster", api_pb2.CreateClusterReply
            )
            created = await create(_cluster("native-1"), metadata=auth)
            assert created.ok
            get = _method(channel, "/cnct.kaas.api.Cluster/GetCluster", api_pb2.GetClusterReply)
            call = get(api_pb2.GetClusterMsg(name="native-1"), metadata=auth)
            assert (await call).cluster.name == "native-1"
            # The stored revision is the reply's ETag, as REST's header says it.
            assert any(key == "etag" for key, _ in await call.initial_metadata())
            listed = _method(
                channel, "/cnct.kaas.api.Cluster/GetClusterList", api_pb2.GetClusterListReply
            )
            compressed = await listed(
                api_pb2.GetClusterListMsg(), metadata=auth, compression=grpc.Compression.Gzip
            )
            assert "native-1" in [c.name for c in compressed.clusters]

    run(scenario())


def test_server_client_and_bidi_streams_and_deadlines(server: Server) -> None:
    async def scenario() -> None:
        async with _channel(server) as channel:
            auth = await _token(channel)
            flavor = flavor_pb2.Flavor(
                key=flavor_pb2.FlavorKey(name="native-x1"), ram=1024, vcpus=1, disk=10
            )
            await _raw(channel, "/edgeproto.FlavorApi/CreateFlavor")(flavor, metadata=auth)
            show = channel.unary_stream(
                "/edgeproto.FlavorApi/ShowFlavor",
                request_serializer=_serialize,
                response_deserializer=flavor_pb2.Flavor.FromString,
            )
            names = [f.key.name async for f in show(flavor_pb2.Flavor(), metadata=auth)]
            assert "native-x1" in names

            # A client stream: a node registers, then reports its status message by message.
            await _raw(channel, "/scheduler.NodeService/Register")(
                scheduler_pb2.NodeRegisterRequest(certificate=certificate("native-node")),
                metadata=auth,
            )
            limit = scheduler_pb2.ResourceSummary(cpu=4, memory=4096, disk=100)
            reports = [
                scheduler_pb2.NodeStatus(
                    id="native-node",
                    status=scheduler_pb2.RUNNING,
                    resource=scheduler_pb2.Resource(limit=limit),
                )
                for _ in range(3)
            ]
            status = channel.stream_unary(
                "/scheduler.NodeService/Status",
                request_serializer=_serialize,
                response_deserializer=lambda b: b,
            )
            assert await status(iter(reports), metadata=auth) == b""  # google.protobuf.Empty

            # A bidirectional stream: the edge's notify peer says hello, the controller answers
            # with everything it has, then SENDALL_END.
            hello = notice_pb2.Notice(action=notice_pb2.VERSION, version=1)
            hello.any.Pack(node_pb2.Node(key=node_pb2.NodeKey(name="native-crm")))
            notify = channel.stream_stream(
                "/edgeproto.NotifyApi/StreamNotice",
                request_serializer=_serialize,
                response_deserializer=notice_pb2.Notice.FromString,
            )
            outgoing: asyncio.Queue[notice_pb2.Notice] = asyncio.Queue()
            await outgoing.put(hello)
            call = notify(_forever(outgoing), metadata=auth)
            while (await asyncio.wait_for(call.read(), 10)).action != notice_pb2.SENDALL_END:
                pass
            call.cancel()

            # A watch with nothing to say ends at its deadline.
            listen = channel.unary_stream(
                "/v1alpha.PublicAPI/ListenEvents",
                request_serializer=_serialize,
                response_deserializer=runtime_pb2.ListenEventsResponse.FromString,
            )
            with pytest.raises(grpc.aio.AioRpcError) as ended:
                async for _ in listen(
                    runtime_pb2.ListenEventsRequest(), metadata=auth, timeout=0.5
                ):
                    pass
            assert ended.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED

    run(scenario())


def test_errors_are_statuses_with_details(server: Server) -> None:
    async def scenario() -> None:
        async with _channel(server) as channel:
            login = _method(channel, LOGIN, auth_pb2.LoginResponse)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await login(auth_pb2.LoginRequest(username="a", password="b"))
            assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            status = rpc_status.from_call(refused.value)
            assert status is not None
            bad = error_details_pb2.BadRequest()
            assert status.details[0].Unpack(bad)
            assert "username" in [v.field for v in bad.field_violations]

            version = _method(channel, VERSION, api_pb2.GetVersionReply)
            with pytest.raises(grpc.aio.AioRpcError) as anonymous:
                await version(api_pb2.GetVersionMsg())
            assert anonymous.value.code() is grpc.StatusCode.UNAUTHENTICATED
            with pytest.raises(grpc.aio.AioRpcError) as unknown:
                await _raw(channel, "/nobody.Service/Method")(b"")
            assert unknown.value.code() is grpc.StatusCode.UNIMPLEMENTED

    run(scenario())


def test_a_keyed_create_runs_once(server: Server) -> None:
    async def scenario() -> None:
        async with _channel(server) as channel:
            auth = await _token(channel)
            create = _method(
                channel, "/cnct.kaas.api.Cluster/CreateCluster", api_pb2.CreateClusterReply
            )
            keyed = (*auth, ("idempotency-key", "native-key-1"))
            request = _cluster("native-once")
            first = await create(request, metadata=keyed)
            again = await create(request, metadata=keyed)  # not ALREADY_EXISTS: the same answer
            assert first == again and first.ok
            with pytest.raises(grpc.aio.AioRpcError) as repeated:
                await create(request, metadata=auth)
            assert repeated.value.code() is grpc.StatusCode.ALREADY_EXISTS

    run(scenario())


def test_reflection_and_health_answer_on_the_one_port(server: Server) -> None:
    async def scenario() -> None:
        async with _channel(server) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            checked = await health.Check(health_pb2.HealthCheckRequest())
            assert checked.status == health_pb2.HealthCheckResponse.SERVING
            asked = reflection_pb2.ServerReflectionRequest(list_services="")
            for path in (
                "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            ):
                info = channel.stream_stream(
                    path,
                    request_serializer=_serialize,
                    response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
                )
                answers = [answer async for answer in info(iter([asked]))]
                listed = {s.name for s in answers[0].list_services_response.service}
                assert {"cnct.kaas.api.Cluster", "grpc.health.v1.Health"} <= listed
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            found = [
                answer
                async for answer in stub.ServerReflectionInfo(
                    iter(
                        [
                            reflection_pb2.ServerReflectionRequest(
                                file_containing_symbol=VERSION[1:].replace("/", ".")
                            )
                        ]
                    )
                )
            ]
            assert found[0].file_descriptor_response.file_descriptor_proto

    run(scenario())


def test_trailers_only_when_a_call_ends_before_any_message(server: Server) -> None:
    # An error before any reply is one HEADERS frame carrying the status (Trailers-Only); a
    # reply's status comes after it, in the trailers.
    envelope = b"\x00\x00\x00\x00\x00"
    with httpx.Client(http1=False, http2=True, base_url=server.base_url, timeout=10) as http:
        refused = http.post(
            VERSION,
            content=envelope,
            headers={"content-type": "application/grpc", "te": "trailers"},
        )
        assert refused.status_code == 200 and refused.content == b""
        assert refused.headers["grpc-status"] == "16"
        assert refused.headers["content-type"] == "application/grpc"
        health = http.post(
            "/grpc.health.v1.Health/Check",
            content=envelope,
            headers={"content-type": "application/grpc", "te": "trailers"},
        )
        assert health.status_code == 200 and len(health.content) > 5
        assert "grpc-status" not in health.headers


def _serialize(message: object) -> bytes:
    return message.SerializeToString()  # type: ignore[attr-defined, no-any-return]


def _raw(channel: grpc.aio.Channel, path: str) -> grpc.aio.UnaryUnaryMultiCallable:
    return channel.unary_unary(path, request_serializer=_serialize, response_deserializer=bytes)


async def _forever(queue: asyncio.Queue[notice_pb2.Notice]) -> AsyncIterator[notice_pb2.Notice]:
    while True:
        yield await queue.get()


def _cluster(name: str) -> api_pb2.CreateClusterMsg:
    return json_format.ParseDict(cluster_body(name), api_pb2.CreateClusterMsg())


def test_portico_call_finds_grpc_on_the_http_port(server: Server) -> None:
    # The shell that runs `portico serve` with PORTICO_SERVER=pyvoy finds gRPC on its HTTP port.
    token = dict(run(_token_of(server)))["authorization"].removeprefix("Bearer ")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PORTICO_")}
    env |= {"PORTICO_SERVER": "pyvoy", "PORTICO_HTTP_PORT": str(server.http_port)}
    called = subprocess.run(
        [sys.executable, "-m", "app", "call", VERSION[1:], "--token", token],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert called.returncode == 0, called.stderr
    assert '"git_version"' in called.stdout or '"gitVersion"' in called.stdout


async def _token_of(server: Server) -> tuple[tuple[str, str], ...]:
    async with _channel(server) as channel:
        return await _token(channel)


def test_calls_are_counted_and_a_stream_ends_when_its_client_goes(server: Server) -> None:
    listen_rpc = 'rpc="v1alpha.PublicAPI.ListenEvents"'

    def open_listens() -> float:
        text = httpx.get(f"{server.base_url}/metrics", timeout=10).text
        for line in text.splitlines():
            grpc_streams = line.startswith("portico_open_streams{") and 'transport="grpc"' in line
            if grpc_streams and listen_rpc in line:
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    async def scenario() -> None:
        async with _channel(server) as channel:
            auth = await _token(channel)
            await _method(channel, VERSION, api_pb2.GetVersionReply)(
                api_pb2.GetVersionMsg(), metadata=auth
            )
            listen = channel.unary_stream(
                "/v1alpha.PublicAPI/ListenEvents",
                request_serializer=_serialize,
                response_deserializer=runtime_pb2.ListenEventsResponse.FromString,
            )
            call = listen(runtime_pb2.ListenEventsRequest(), metadata=auth)
            await eventually(
                lambda: asyncio.to_thread(lambda: open_listens() == 1), what="the stream open"
            )
            call.cancel()  # the client goes: the server's call ends too
            await eventually(
                lambda: asyncio.to_thread(lambda: open_listens() == 0), what="the stream ended"
            )

    run(scenario())
    counted = httpx.get(f"{server.base_url}/metrics", timeout=10).text
    assert any(
        line.startswith("portico_requests_total{")
        and 'transport="grpc"' in line
        and 'rpc="cnct.kaas.api.Cluster.GetVersionInformation"' in line
        and 'code="OK"' in line
        for line in counted.splitlines()
    ), counted
