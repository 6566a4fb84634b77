"""The committed generated artifacts are exactly what the protos produce today."""

from __future__ import annotations

import filecmp
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import codegen
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


def test_the_generated_pages_are_in_sync_with_the_descriptors_and_settings():
    for page, expected in codegen.generated_pages(Registry.from_package("gen")).items():
        assert page.read_text() == expected, f"{page.name}'s tables are stale; run `portico gen`"


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
    api_pb2 = importlib.import_module("gen.cnct.kaas.api.api_pb2")
    api_pb2_grpc = importlib.import_module("gen.cnct.kaas.api.api_pb2_grpc")

    assert api_pb2.DESCRIPTOR.package == "cnct.kaas.api"
    assert api_pb2.DESCRIPTOR.name == "cnct/kaas/api/api.proto"
    assert hasattr(api_pb2_grpc, "ClusterServicer")
    assert str(codegen.GEN) not in sys.path


def test_installed_packages_named_like_proto_folders_do_not_shadow_generated_code(tmp_path):
    # Another project's top-level "edgeproto" or "services" must not be imported in place of ours.
    for name in ("edgeproto", "services"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("raise ImportError('the wrong package')\n")
    script = (
        "import gen.edgeproto.app_inst_pb2 as m, gen.services.auth.auth_pb2_grpc as g, sys;"
        "print(m.AppInst.DESCRIPTOR.full_name, g.AuthServiceServicer.__name__,"
        " any(p.endswith('gen') for p in sys.path))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=codegen.ROOT,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{codegen.ROOT}"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["edgeproto.AppInst", "AuthServiceServicer", "False"]


def test_generated_imports_are_made_relative_to_the_package_root():
    generated = {("edgeproto", "result_pb2"), ("top_pb2",), ("edgeproto", "app_pb2")}
    text = (
        "import grpc\n"
        "import top_pb2\n"
        "from edgeproto import result_pb2 as edgeproto_dot_result__pb2\n"
        "from google.api import annotations_pb2 as _annotations_pb2\n"
    )
    assert codegen.relative_imports(text, ("edgeproto", "app_pb2"), generated) == (
        "import grpc\n"
        "from .. import top_pb2\n"
        "from ..edgeproto import result_pb2 as edgeproto_dot_result__pb2\n"
        "from google.api import annotations_pb2 as _annotations_pb2\n"
    )
