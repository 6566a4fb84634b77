"""buf over protos/, offline (buf.yaml; googleapis' files in gen/imports), and ``buf curl`` with
the descriptor set a live Portico serves at /descriptors.binpb."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from app.cli.codegen import DESCRIPTOR_SET, GEN, PROTOS, proto_files
from tests.conftest import ROOT
from tests.dashboard.conftest import live_portico
from tests.harness import ADMIN_PASSWORD

from .node_clients import node_tool

BUF_SECONDS = 120
# A proxy nothing listens on: any attempt to reach the Buf Schema Registry fails.
NO_NETWORK = "http://127.0.0.1:9"


def buf(*args: str, cwd: Path = ROOT, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "BUF_CACHE_DIR": str(cache),  # nothing cached from an earlier, online run
        "HTTPS_PROXY": NO_NETWORK,
        "HTTP_PROXY": NO_NETWORK,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    return subprocess.run(
        [node_tool("buf"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUF_SECONDS,
        check=False,
    )


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "buf-cache"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A copy of what buf.yaml names, to change without touching the repository."""
    copy = tmp_path / "workspace"
    copy.mkdir()
    shutil.copy(ROOT / "buf.yaml", copy)
    shutil.copytree(PROTOS, copy / "protos")
    shutil.copytree(GEN / "imports", copy / "gen" / "imports")
    return copy


def _image_files(path: Path) -> set[str]:
    return {f.name for f in descriptor_pb2.FileDescriptorSet.FromString(path.read_bytes()).file}


def test_buf_builds_the_protos_offline(tmp_path: Path, cache: Path) -> None:
    image = tmp_path / "image.binpb"
    done = buf("build", "-o", str(image), "--exclude-imports", cache=cache)
    assert done.returncode == 0, done.stderr
    built = _image_files(image)
    assert {str(p.relative_to(PROTOS)) for p in proto_files()} <= built
    assert {"google/api/annotations.proto", "google/rpc/status.proto"} <= built


def test_buf_lint_passes_and_holds_a_new_file_to_the_standard_rules(
    workspace: Path, cache: Path
) -> None:
    done = buf("lint", cache=cache)
    assert done.returncode == 0, done.stdout + done.stderr
    # The seed protos are exempt from rules by folder; a file of Portico's own is not.
    new = workspace / "protos" / "portico" / "things" / "v1" / "things.proto"
    new.parent.mkdir(parents=True)
    new.write_text(
        'syntax = "proto3";\npackage portico.things.v1;\n'
        "message thing { string Name = 1; }\n"
        "service Things { rpc Get(thing) returns (thing); }\n"
    )
    done = buf("lint", "--error-format=json", cwd=workspace, cache=cache)
    assert done.returncode != 0
    found = {json.loads(line)["type"] for line in done.stdout.splitlines()}
    assert {"MESSAGE_PASCAL_CASE", "FIELD_LOWER_SNAKE_CASE", "SERVICE_SUFFIX"} <= found
    assert {json.loads(line)["path"] for line in done.stdout.splitlines()} == {
        "protos/portico/things/v1/things.proto"
    }


def test_buf_breaking_finds_a_renamed_field_and_passes_the_committed_descriptors(
    workspace: Path, tmp_path: Path, cache: Path
) -> None:
    same = buf("breaking", str(workspace), "--against", str(ROOT), cache=cache)
    assert same.returncode == 0, same.stdout + same.stderr
    auth = workspace / "protos" / "services" / "auth" / "auth.proto"
    auth.write_text(auth.read_text().replace("string username = 1;", "string user = 1;"))
    broken = buf("breaking", str(workspace), "--against", str(ROOT), cache=cache)
    assert broken.returncode != 0
    assert 'on message "LoginRequest" changed name from "username" to "user"' in broken.stdout
    # The image buf builds against the one `portico gen` compiled and committed.
    image = tmp_path / "current.binpb"
    assert buf("build", "-o", str(image), cache=cache).returncode == 0
    against = GEN / DESCRIPTOR_SET
    done = buf("breaking", str(image), "--against", str(against), "--exclude-imports", cache=cache)
    assert done.returncode == 0, done.stdout + done.stderr


def test_buf_curl_calls_a_live_server_with_its_served_descriptors(
    tmp_path_factory: pytest.TempPathFactory, cache: Path
) -> None:
    tmp = tmp_path_factory.mktemp("curl")
    with live_portico(tmp / "portico") as live:
        schema = tmp / "portico.binpb"
        with urllib.request.urlopen(f"{live.url}/descriptors.binpb", timeout=30) as reply:
            schema.write_bytes(reply.read())  # no token: like /openapi.json
        grpc_url = f"http://127.0.0.1:{live.server.portico.grpc_port}"
        login = buf(
            "curl", "--schema", str(schema), "--protocol", "grpc", "--http2-prior-knowledge",
            "--data", json.dumps({"username": "admin", "password": ADMIN_PASSWORD}),
            f"{grpc_url}/services.auth.AuthService/Login",
            cache=cache,
        )  # fmt: skip
        assert login.returncode == 0, login.stderr
        token = json.loads(login.stdout)["token"]
        # Over Connect, on the HTTP port, with the schema read from the server's URL.
        stats = buf(
            "curl", "--schema", f"{live.url}/descriptors.binpb", "--protocol", "connect",
            "-H", f"authorization: Bearer {token}",
            f"{live.url}/api/stats.StatsService/GetClusterStats",
            cache=cache,
        )  # fmt: skip
        assert stats.returncode == 0, stats.stderr
        assert json.loads(stats.stdout)["stats"]["id"]
        refused = buf(
            "curl", "--schema", str(schema), "--protocol", "grpc", "--http2-prior-knowledge",
            f"{grpc_url}/stats.StatsService/GetClusterStats",
            cache=cache,
        )  # fmt: skip
        assert refused.returncode != 0
        assert "unauthenticated" in refused.stderr.lower(), refused.stderr
