"""Generated artifacts: ``gen/`` from ``protos/``, and the docs' generated tables.

``portico gen`` runs both. Tests run them into a temporary folder and compare with what is
committed, so the committed copies never drift from the protos. It also writes ``openapi.yaml``.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import descriptor_pb2

from app.catalog import portico_openapi
from app.gateway.registry import Registry
from app.settings.reference import other_variables_table, settings_table

ROOT = Path(__file__).resolve().parents[2]
PROTOS = ROOT / "protos"
GEN = ROOT / "gen"
# The documentation pages that hold generated sections.
RPC_PAGE = ROOT / "docs" / "reference" / "rpcs.md"
SETTINGS_PAGE = ROOT / "docs" / "reference" / "settings.md"
OPENAPI = ROOT / "openapi.yaml"
DESCRIPTOR_SET = "portico.binpb"
# The .proto files from outside protos/ that buf needs to build it offline (buf.yaml names this
# folder a module): what protos/ imports from googleapis, and the google.rpc error types every
# reply may carry. Copied from the installed googleapis-common-protos, the same files protoc
# compiles against; the well-known google/protobuf/*.proto are buf's own.
IMPORTS = "imports"
ERROR_PROTOS = (
    "google/rpc/code.proto",
    "google/rpc/status.proto",
    "google/rpc/error_details.proto",
)

# The generated tree is an ordinary package: its modules import each other relatively (see
# ``relative_imports``), so nothing is put on sys.path and no installed package named like a proto
# folder ("services", "stats", ...) can shadow them.
GEN_INIT = '''"""Code generated from protos/ by `portico gen`. DO NOT EDIT."""

import os

DESCRIPTOR_SET = os.path.join(os.path.dirname(__file__), "portico.binpb")
'''

# Protoc names Python modules after proto paths ("cnct/kaas/api/api.proto" -> "cnct.kaas.api"), so
# generated code imports its siblings absolutely ("from edgeproto import common_pb2 as ..."),
# which only resolves with the generated folder itself on sys.path. Neither protoc nor
# grpcio-tools has an option for package-relative imports; protoletariat, the tool that rewrites
# them, pins protobuf<6. These are the only import shapes protoc and grpcio-tools emit.
_FROM_IMPORT = re.compile(r"^from ([\w.]+) import (\w+)( as \w+)?$", re.M)
_PLAIN_IMPORT = re.compile(r"^import (\w+)( as \w+)?$", re.M)


def relative_imports(text: str, module: tuple[str, ...], generated: set[tuple[str, ...]]) -> str:
    """``text`` of the generated ``module`` (its dotted path below the package root) with each
    import of another generated module made relative to the package root; others (google.*,
    grpc) stay as they are."""
    up = "." * len(module)  # from gen/a/b/x_pb2.py, "..." is gen/

    def from_import(match: re.Match[str]) -> str:
        package, name, alias = match.group(1), match.group(2), match.group(3) or ""
        if (*package.split("."), name) not in generated:
            return match.group(0)
        return f"from {up}{package} import {name}{alias}"

    def plain_import(match: re.Match[str]) -> str:
        name, alias = match.group(1), match.group(2)
        if (name,) not in generated:
            return match.group(0)
        return f"from {up} import {name}{alias or ''}"

    return _PLAIN_IMPORT.sub(plain_import, _FROM_IMPORT.sub(from_import, text))


def make_imports_relative(root: Path) -> None:
    """Rewrite every generated .py and .pyi below ``root`` with ``relative_imports``."""
    files = sorted(p for p in root.rglob("*") if p.suffix in (".py", ".pyi"))
    generated = {p.relative_to(root).with_suffix("").parts for p in files}
    for path in files:
        module = path.relative_to(root).with_suffix("").parts
        path.write_text(relative_imports(path.read_text(), module, generated))


def proto_files(protos: Path = PROTOS) -> list[Path]:
    """Every .proto file below ``protos``, in a stable order."""
    return sorted(protos.rglob("*.proto"))


def generate(out: Path = GEN, protos: Path = PROTOS) -> None:
    """Compile ``protos`` into ``out``: _pb2, _pb2_grpc, .pyi and a descriptor set with comments."""
    try:
        import grpc_tools
        from grpc_tools import protoc
    except ImportError as exc:  # grpcio-tools is a development dependency
        raise SystemExit("portico gen needs grpcio-tools: pip install -e '.[test]'") from exc
    import google.api

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    googleapis = Path(next(iter(google.api.__path__))).parent.parent
    staging = out.with_name(out.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    sources = [str(p.relative_to(protos)) for p in proto_files(protos)]
    args = [
        "grpc_tools.protoc",
        f"-I{protos}",
        f"-I{googleapis}",
        f"-I{well_known}",
        f"--python_out={staging}",
        f"--pyi_out={staging}",
        f"--grpc_python_out={staging}",
        f"--descriptor_set_out={staging / DESCRIPTOR_SET}",
        "--include_imports",
        "--include_source_info",
        *sources,
    ]
    if protoc.main(args) != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise SystemExit("protoc failed; see the messages above")
    make_imports_relative(staging)
    (staging / "__init__.py").write_text(GEN_INIT)
    copy_imports(staging / DESCRIPTOR_SET, protos, googleapis, staging / IMPORTS)
    # Replace the old tree only once the new one is complete.
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)


def copy_imports(descriptor_set: Path, protos: Path, googleapis: Path, out: Path) -> None:
    """Copy into ``out`` each googleapis file the compiled ``descriptor_set`` holds (what
    ``protos`` imports, directly or not) and the google.rpc error types, as installed."""
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes()).file
    # The well-known types are buf's (and protoc's) own.
    names = {f.name for f in files if not f.name.startswith("google/protobuf/")}
    names = {n for n in names if not (protos / n).is_file()}
    names = {n for n in names if (googleapis / n).is_file()} | set(ERROR_PROTOS)
    for name in sorted(names):
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(googleapis / name, target)


def _routes(method) -> Iterable[str]:
    for binding in method.http:
        yield f"`{binding.verb} {binding.path}`"
    yield f"`POST /{method.service}/{method.name}`"


def rpc_table(registry: Registry) -> str:
    """A Markdown table of every RPC: gRPC path, streaming kind and HTTP routes."""
    lines = [
        "| RPC | gRPC path | streaming | HTTP routes |",
        "| --- | --- | --- | --- |",
    ]
    for method in registry:
        kind = method.kind.replace("_", " ")
        routes = "<br>".join(_routes(method))
        lines.append(f"| {method.full_name} | `{method.grpc_path}` | {kind} | {routes} |")
    return "\n".join(lines) + "\n"


def page_with_section(page_text: str, name: str, content: str) -> str:
    """A documentation page's text with ``content`` between its ``<!-- name:begin/end -->``
    markers (the generated parts: the RPC and settings tables, the benchmark's numbers)."""
    markers = re.compile(
        rf"(<!-- {re.escape(name)}:begin -->\n).*?(<!-- {re.escape(name)}:end -->)", re.S
    )
    if not markers.search(page_text):
        raise ValueError(f"the page has no <!-- {name}:begin/end --> markers")
    return markers.sub(lambda m: m.group(1) + content + m.group(2), page_text)


def generated_pages(registry: Registry | None = None) -> dict[Path, str]:
    """The documentation pages with generated sections, as ``portico gen`` writes them: the RPC
    table from the descriptors, the settings table from the settings the server checks."""
    registry = registry or Registry.from_package("gen")
    return {
        RPC_PAGE: page_with_section(RPC_PAGE.read_text(), "rpc-table", rpc_table(registry)),
        SETTINGS_PAGE: page_with_section(
            page_with_section(SETTINGS_PAGE.read_text(), "settings-table", settings_table()),
            "other-variables-table",
            other_variables_table(),
        ),
    }


def update_pages(registry: Registry | None = None) -> None:
    """Rewrite the generated sections of the documentation pages."""
    for page, text in generated_pages(registry).items():
        page.write_text(text)


# libyaml's emitter where PyYAML was built with it: the same text, ten times sooner.
_SafeDumper = yaml.CSafeDumper if yaml.__with_libyaml__ else yaml.SafeDumper


class _BlockDumper(_SafeDumper):  # type: ignore[valid-type,misc]  # a base chosen at import
    """Multi-line strings as ``|`` blocks, and no anchors: the file is read by people and diffs."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def openapi_yaml(document: dict[str, Any]) -> str:
    """The document as YAML, keys in the document's own (deterministic) order."""
    return yaml.dump(document, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100)


def write_openapi(path: Path = OPENAPI, registry: Registry | None = None) -> None:
    """Write ``openapi.yaml`` from the descriptors (``-`` prints it)."""
    text = openapi_yaml(portico_openapi(registry))
    if str(path) == "-":
        sys.stdout.write(text)
    else:
        Path(path).write_text(text)


def main() -> None:
    """Regenerate gen/, the documentation's generated tables and openapi.yaml."""
    generate()
    # A fresh interpreter state is not needed: gen modules are imported only after generation.
    sys.modules.pop("gen", None)
    update_pages()
    write_openapi()
