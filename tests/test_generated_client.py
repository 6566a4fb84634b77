"""A Python client generated from openapi.yaml (openapi-python-client) drives a running server.

It logs in, creates, reads and lists KaaS clusters, gets a 404 as a typed ``GoogleRpcStatus``,
and reads a server stream item by item with the README's stream helper (its code block, run as
written), over real HTTP. Generating the client takes seconds, so it is kept in pytest's cache
under the hash of the document and the generator's version, and made again only when either
changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.cli import codegen
from tests.conftest import ROOT
from tests.generated_package import imported
from tests.harness import ADMIN_PASSWORD, run, running, uvicorn_serving

PACKAGE = "portico_client"
# What the generator cannot make: the client streams' NDJSON request bodies.
NOT_GENERATED = {
    "POST /v1/scheduler/nodes:status",
    "POST /scheduler.NodeService/Status",
    "POST /v1/edge/notices:stream",
    "POST /edgeproto.NotifyApi/StreamNotice",
}


def _generate(target: Path) -> None:
    work = target.with_name(target.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    generator = Path(sys.executable).with_name("openapi-python-client")
    done = subprocess.run(
        [
            str(generator),
            "generate",
            "--path",
            str(codegen.OPENAPI),
            "--meta",
            "none",
            "--output-path",
            str(work / PACKAGE),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (work / "generate.log").write_text(done.stdout + done.stderr)
    work.rename(target)  # whole or not at all: a concurrent run sees one or the other


@pytest.fixture(scope="module")
def generated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding the generated package, made once per document and generator."""
    version = importlib.metadata.version("openapi-python-client")
    digest = hashlib.sha256(codegen.OPENAPI.read_bytes() + version.encode()).hexdigest()[:16]
    cache = request.config.cache
    base = Path(cache.mkdir("generated-client")) if cache else tmp_path_factory.mktemp("client")
    target = base / digest
    if not (target / PACKAGE / "__init__.py").exists():
        _generate(target)
    return target


@pytest.fixture
def client_package(generated: Path) -> Iterator[Any]:
    with imported(generated, PACKAGE) as package:
        yield package


def test_the_generator_makes_every_operation_but_the_ndjson_bodies(generated: Path) -> None:
    log = (generated / "generate.log").read_text()
    skipped = set(re.findall(r"WARNING parsing (\S+ \S+) within", log))
    assert skipped == NOT_GENERATED, log[-3000:]
    assert log.count("WARNING") == len(NOT_GENERATED), log[-3000:]


def _readme_block(marker: str, **replaced: str) -> dict[str, Any]:
    """What running the python block under "Generated clients" that holds ``marker`` defines,
    its text ``replaced`` (the README's address and password by this test's)."""
    page = (ROOT / "docs" / "how-to" / "generated-clients.md").read_text()
    section = page.split("\n### Generated clients\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    (code,) = [block for block in blocks if marker in block]
    for old, new in replaced.items():
        assert old in code, old
        code = code.replace(old, new)
    namespace: dict[str, Any] = {}
    exec(compile(code, "generated-clients.md", "exec"), namespace)
    return namespace


def _readme_helper() -> dict[str, Any]:
    """The README's stream helper."""
    return _readme_block("def stream(")


def _scenario(url: str) -> None:
    """What a user of the generated client does, synchronously: log in as the README shows,
    then call."""
    logged_in = _readme_block(
        "auth_service_login",
        **{"http://127.0.0.1:8080": url, '"change-me-now"': repr(ADMIN_PASSWORD)},
    )
    with logged_in["client"] as client:
        _calls(client)


def _calls(client: Any) -> None:
    """Unary calls, a typed error and a stream, with a logged-in client."""
    from portico_client.api.cnct_kaas_api_cluster import (
        cluster_create_cluster,
        cluster_get_cluster,
        cluster_get_cluster_list,
    )
    from portico_client.api.edgeproto_operator_api import (
        operator_api_create_operator,
        operator_api_show_operator,
    )
    from portico_client.models import (
        ClusterCreateClusterBody,
        CnctKaasApiCreateClusterReply,
        EdgeprotoOperator,
        EdgeprotoOperatorInput,
        EdgeprotoOperatorStreamItem,
        GoogleRpcStatus,
        OperatorApiCreateOperatorBody,
    )

    spec = {
        "name": "sdk",
        "k8s_version": "1.31.2",
        "control_plane_nodes": {"count": 1, "instanceType": "standard"},
        "worker_node_pools": [{"name": "workers", "instanceType": "standard", "count": 1}],
    }
    body = ClusterCreateClusterBody.from_dict(spec)
    created = cluster_create_cluster.sync(client=client, body=body)
    assert isinstance(created, CnctKaasApiCreateClusterReply) and created.ok
    got = cluster_get_cluster.sync(client=client, name="sdk")
    assert not isinstance(got, GoogleRpcStatus) and got is not None
    assert got.cluster.name == "sdk"
    missing = cluster_get_cluster.sync(client=client, name="absent")
    assert isinstance(missing, GoogleRpcStatus) and missing.code == 5  # NOT_FOUND
    listed = cluster_get_cluster_list.sync(client=client)
    assert not isinstance(listed, GoogleRpcStatus) and listed is not None
    assert [c.name for c in listed.clusters] == ["sdk"]

    for name in ("Acme", "Globex"):
        operator = OperatorApiCreateOperatorBody.from_dict({"key": {"name": name}})
        assert not isinstance(
            operator_api_create_operator.sync(client=client, body=operator), GoogleRpcStatus
        )
    # The generated function itself returns a finished stream's body: text, one item a line.
    # A request's model is its own: a field may be None, sent as null (the unset field, as
    # proto3 JSON reads it), so this filter is every operator.
    body = EdgeprotoOperatorInput(key=None)
    assert body.to_dict() == {"key": None}
    whole = operator_api_show_operator.sync_detailed(client=client, body=body)
    assert whole.status_code == 200
    assert isinstance(whole.parsed, str) and whole.parsed == whole.content.decode()
    lines = [json.loads(line) for line in whole.parsed.splitlines() if line]
    replies = [EdgeprotoOperatorStreamItem.from_dict(line).result for line in lines]
    assert [reply.key.name for reply in replies] == ["Acme", "Globex"]
    helper = _readme_helper()
    stream, stream_error = helper["stream"], helper["StreamError"]
    items = stream(client, operator_api_show_operator, EdgeprotoOperatorStreamItem)
    first = next(items)  # one item, before the stream is read any further
    assert isinstance(first, EdgeprotoOperator)
    assert [first.key.name] + [o.key.name for o in items] == ["Acme", "Globex"]
    # A filter the server refuses: a StreamError carrying the typed Status.
    bad = EdgeprotoOperatorInput.from_dict({"key": {"name": "ends in a space "}})
    with pytest.raises(stream_error) as refused:
        list(stream(client, operator_api_show_operator, EdgeprotoOperatorStreamItem, body=bad))
    assert refused.value.status.code == 3  # INVALID_ARGUMENT


def test_a_generated_client_logs_in_calls_fails_typed_and_reads_a_stream(
    client_package: Any, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with (
            running(tmp_path) as server,
            uvicorn_serving(server.portico.http_app) as address,
        ):
            # The generated client is synchronous: it runs beside the server's event loop.
            await asyncio.to_thread(_scenario, f"http://{address}")

    run(scenario())
