"""A grpc-go client on the one HTTP port of ``portico serve --server pyvoy``.

The client (go/grpc_call) is built offline from Debian's Go packages and knows no Portico
proto: it sends the bytes this module encodes with the generated classes in gen/ and prints
what came back (replies, headers, trailers, status and its details) for this module to decode.
So each call below is grpc-go's own HTTP/2, framing, deadlines, compression and status
handling against Portico's native gRPC room, over cleartext HTTP/2 with prior knowledge.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
import httpx
import pytest
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_reflection.v1alpha import reflection_pb2

from app.services.kudo.certificates import self_signed
from gen.cnct.kaas.api import api_pb2 as kaas
from gen.edgeproto import flavor_pb2, result_pb2
from gen.scheduler import scheduler_pb2 as scheduler
from gen.services.auth import auth_pb2
from gen.v1alpha import api_pb2 as runtime
from tests import go_build
from tests.harness import ADMIN_PASSWORD
from tests.reliability.server import Server, start_server

SOURCE = Path(__file__).parent / "go" / "grpc_call" / "main.go"
LOGIN = "/services.auth.AuthService/Login"
VERSION = "/cnct.kaas.api.Cluster/GetVersionInformation"
CALL_SECONDS = 30


def grpc_call_binary() -> Path:
    """go/grpc_call, built once per source and Go toolchain (no generated code in it)."""
    go, _ = go_build.require_go_grpc()

    def build(cache: Path, binary: Path) -> None:
        gopath = cache / "gopath"
        package = gopath / "src" / "portico.test" / "grpc_call"
        shutil.rmtree(package, ignore_errors=True)
        package.mkdir(parents=True)
        shutil.copy(SOURCE, package / "main.go")
        failed = go_build.go_build(go, package, [gopath, go_build.GOCODE.parent], cache, binary)
        if failed:
            pytest.fail(f"go build of grpc_call failed:\n{failed}")

    return go_build.cached_binary(go, "grpc-call", (SOURCE.read_bytes(),), build)


@dataclass
class Outcome:
    """What grpc-go saw of one call."""

    replies: list[bytes]
    headers: dict[str, list[str]]
    trailers: dict[str, list[str]]
    code: grpc.StatusCode
    message: str
    details: list[tuple[str, bytes]]
    reply_encoding: str  # the replies' grpc-encoding ("" for none)
    reply_wire_lengths: list[int]  # each reply's length as sent, compressed or not


CODES = {code.value[0]: code for code in grpc.StatusCode}


@dataclass
class GoClient:
    binary: Path
    target: str

    def call(
        self,
        method: str,
        *requests: Message,
        kind: str = "unary",
        token: str = "",
        timeout: str = "",
        flags: Sequence[str] = (),
    ) -> Outcome:
        command = [str(self.binary), "-target", self.target, "-method", method, "-kind", kind]
        if token:
            command += ["-md", f"authorization=Bearer {token}"]
        if timeout:
            command += ["-timeout", timeout]
        # Requests on stdin, one hex line each (an empty line: an empty message).
        lines = "".join(request.SerializeToString().hex() + "\n" for request in requests)
        done = subprocess.run(
            [*command, *flags, "-"],
            input=lines,
            capture_output=True,
            text=True,
            timeout=CALL_SECONDS,
        )
        assert done.returncode == 0, done.stderr
        said = json.loads(done.stdout)
        return Outcome(
            replies=[bytes.fromhex(reply) for reply in said["replies"]],
            headers=said["headers"],
            trailers=said["trailers"],
            code=CODES[said["code"]],
            message=said["message"],
            details=[(d["type_url"], bytes.fromhex(d["value"])) for d in said["details"]],
            reply_encoding=said["reply_encoding"],
            reply_wire_lengths=said["reply_wire_lengths"],
        )


@pytest.fixture(scope="module")
def binary() -> Path:
    return grpc_call_binary()


@pytest.fixture(scope="module")
def server(binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One pyvoy server for the module; HTTP and native gRPC on its one port."""
    running = start_server(tmp_path_factory.mktemp("go-client") / "data", server="pyvoy")
    try:
        running.wait_ready()
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def go(binary: Path, server: Server) -> GoClient:
    assert server.grpc_port == server.http_port  # the one port
    return GoClient(binary, f"127.0.0.1:{server.http_port}")


@pytest.fixture(scope="module")
def token(go: GoClient) -> str:
    login = go.call(LOGIN, auth_pb2.LoginRequest(username="admin", password=ADMIN_PASSWORD))
    assert login.code == grpc.StatusCode.OK, login.message
    (reply,) = login.replies
    return auth_pb2.LoginResponse.FromString(reply).token


def test_unary_login_then_an_authenticated_call(go: GoClient, token: str) -> None:
    version = go.call(VERSION, kaas.GetVersionMsg(), token=token)
    assert version.code == grpc.StatusCode.OK, version.message
    assert version.headers["content-type"] == ["application/grpc"]
    (reply,) = version.replies
    decoded = kaas.GetVersionReply.FromString(reply)
    assert decoded.ok and decoded.version_information.git_version


def test_server_streaming_lists_a_flavor_created_by_grpc_go(go: GoClient, token: str) -> None:
    flavor = flavor_pb2.Flavor(
        key=flavor_pb2.FlavorKey(name="go-small"), ram=1024, vcpus=2, disk=10
    )
    created = go.call("/edgeproto.FlavorApi/CreateFlavor", flavor, token=token)
    assert created.code == grpc.StatusCode.OK, created.message
    result_pb2.Result.FromString(created.replies[0])

    shown = go.call(
        "/edgeproto.FlavorApi/ShowFlavor", flavor_pb2.Flavor(), kind="server", token=token
    )
    assert shown.code == grpc.StatusCode.OK, shown.message
    flavors = {f.key.name: f for f in map(flavor_pb2.Flavor.FromString, shown.replies)}
    assert flavors["go-small"].ram == 1024 and flavors["go-small"].vcpus == 2


def test_client_streaming_status_makes_the_node_healthy(
    go: GoClient, token: str, server: Server
) -> None:
    node = "go-node"
    registered = go.call(
        "/scheduler.NodeService/Register",
        scheduler.NodeRegisterRequest(certificate=self_signed(node)[0]),
        token=token,
    )
    assert registered.code == grpc.StatusCode.OK, registered.message
    assert scheduler.NodeRegisterResponse.FromString(registered.replies[0]).subnet

    limit = scheduler.Resource(limit=scheduler.ResourceSummary(cpu=2, memory=512, disk=5))
    reports = [scheduler.NodeStatus(id=node, status=scheduler.RUNNING, resource=limit)] * 3
    status = go.call("/scheduler.NodeService/Status", *reports, kind="client", token=token)
    assert status.code == grpc.StatusCode.OK, status.message
    assert status.replies == [b""]  # google.protobuf.Empty

    # Healthy: an instance (REST, on the same port) is placed on it, and its pod says so.
    auth = {"authorization": f"Bearer {token}"}
    instance = {
        "id": "go-instance",
        "name": "go",
        "uri": "docker://nginx:1.25",
        "resource": {"limit": {"cpu": 1, "memory": 128, "disk": 1}},
    }
    url = f"{server.base_url}/v1/scheduler/instances"
    with httpx.stream("POST", url, headers=auth, json=instance, timeout=10) as created:
        assert created.status_code == 200
        for line in created.iter_lines():
            if json.loads(line)["result"]["status"] == "SCHEDULED":
                assert f"node '{node}'" in line
                break
        else:
            pytest.fail("the instance was never scheduled")
    pod = httpx.get(f"{server.base_url}/v1/runtime/pods/go-instance", headers=auth, timeout=10)
    annotations = {a["Key"]: a["value"] for a in pod.json()["pod"]["annotations"]}
    assert annotations["scheduler/node"] == node
    assert annotations["scheduler/node-state"] == "READY"


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
def test_bidi_reflection(go: GoClient, version: str) -> None:
    requests = [
        reflection_pb2.ServerReflectionRequest(list_services=""),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol="edgeproto.FlavorApi"),
    ]
    method = f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo"
    answered = go.call(method, *requests, kind="bidi")
    assert answered.code == grpc.StatusCode.OK, answered.message
    listed, described = map(reflection_pb2.ServerReflectionResponse.FromString, answered.replies)
    services = {s.name for s in listed.list_services_response.service}
    assert {"edgeproto.FlavorApi", f"grpc.reflection.{version}.ServerReflection"} <= services
    assert described.file_descriptor_response.file_descriptor_proto


def test_deadline_ends_an_endless_stream(go: GoClient, token: str) -> None:
    listened = go.call(
        "/v1alpha.PublicAPI/ListenEvents",
        runtime.ListenEventsRequest(),
        kind="server",
        token=token,
        timeout="300ms",
    )
    assert listened.code == grpc.StatusCode.DEADLINE_EXCEEDED, listened.message


@pytest.mark.parametrize("flags", [["-gzip"], ["-gzip", "-content-subtype", "proto"]])
def test_gzip_both_ways(go: GoClient, token: str, flags: list[str]) -> None:
    """Requests compressed with gzip (also as ``application/grpc+proto``) are understood, and
    the replies come back compressed; without it they come back as they are."""
    login = go.call(
        LOGIN, auth_pb2.LoginRequest(username="admin", password=ADMIN_PASSWORD), flags=flags
    )
    assert login.code == grpc.StatusCode.OK, login.message
    fresh = auth_pb2.LoginResponse.FromString(login.replies[0]).token
    assert go.call(VERSION, kaas.GetVersionMsg(), token=fresh).code == grpc.StatusCode.OK

    # A file descriptor set: a reply large and repetitive enough to be worth compressing.
    asked = reflection_pb2.ServerReflectionRequest(file_containing_symbol="edgeproto.FlavorApi")
    method = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
    compressed = go.call(method, asked, kind="bidi", flags=flags)
    plain = go.call(method, asked, kind="bidi")
    assert compressed.replies == plain.replies
    assert (compressed.reply_encoding, plain.reply_encoding) == ("gzip", "")
    (size,) = (len(reply) for reply in plain.replies)
    assert plain.reply_wire_lengths == [size]
    assert compressed.reply_wire_lengths[0] < size / 2


def test_invalid_argument_carries_a_bad_request_detail(go: GoClient) -> None:
    refused = go.call(LOGIN, auth_pb2.LoginRequest(username="a", password=ADMIN_PASSWORD))
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "username" in refused.message
    ((type_url, value),) = refused.details
    assert type_url == "type.googleapis.com/google.rpc.BadRequest"
    (violation,) = error_details_pb2.BadRequest.FromString(value).field_violations
    assert violation.field == "username" and "3-24 characters" in violation.description


def test_no_token_is_unauthenticated(go: GoClient) -> None:
    assert go.call(VERSION, kaas.GetVersionMsg()).code == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.parametrize(
    "method", ["/cnct.kaas.api.Cluster/NoSuchMethod", "/no.such.Service/GetVersionInformation"]
)
def test_unknown_method_is_unimplemented(go: GoClient, token: str, method: str) -> None:
    assert go.call(method, kaas.GetVersionMsg(), token=token).code == grpc.StatusCode.UNIMPLEMENTED
