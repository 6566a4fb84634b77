"""The committed generated artifacts are exactly what the protos produce today."""

from __future__ import annotations

import filecmp
import importlib
from pathlib import Path

import pytest

from app import codegen
from app.gateway.registry import Registry


def _tree(root: Path) -> set[str]:
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_gen_is_in_sync_with_protos(tmp_path):
    pytest.importorskip("grpc_tools", reason="grpcio-tools is a test dependency")
    fresh = tmp_path / "gen"
    codegen.generate(out=fresh)
    committed, regenerated = _tree(codegen.GEN), _tree(fresh)
    assert committed == regenerated, "files differ; run `portico gen`"
    stale = [
        name
        for name in sorted(committed)
        if not filecmp.cmp(codegen.GEN / name, fresh / name, shallow=False)
    ]
    assert not stale, f"stale generated files (run `portico gen`): {stale}"


def test_readme_rpc_table_is_in_sync_with_the_descriptors():
    readme = codegen.README.read_text()
    expected = codegen.readme_with_table(readme, codegen.rpc_table(Registry.from_package("gen")))
    assert readme == expected, "README.md's RPC table is stale; run `portico gen`"


def test_rpc_table_lists_every_rpc_with_its_routes():
    registry = Registry.from_package("gen")
    table = codegen.rpc_table(registry)
    rows = [line for line in table.splitlines()[2:]]
    assert len(rows) == len(registry) == 80
    create = next(r for r in rows if r.startswith("| cnct.kaas.api.Cluster.CreateCluster |"))
    assert "`POST /api/v1/cluster`" in create
    assert "`POST /cnct.kaas.api.Cluster/CreateCluster`" in create
    notice = next(r for r in rows if r.startswith("| edgeproto.NotifyApi.StreamNotice |"))
    assert "bidi streaming" in notice


def test_generated_modules_import_from_the_package():
    # Importing `gen` puts the generated tree on sys.path, so proto-path module names resolve.
    importlib.import_module("gen")
    api_pb2 = importlib.import_module("cnct.kaas.api.api_pb2")
    api_pb2_grpc = importlib.import_module("cnct.kaas.api.api_pb2_grpc")

    assert api_pb2.DESCRIPTOR.package == "cnct.kaas.api"
    assert hasattr(api_pb2_grpc, "ClusterServicer")
