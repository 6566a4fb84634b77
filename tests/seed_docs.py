"""Read the seed API documents (generated protobuf documentation) into plain data.

Two dialects occur: protoc-gen-doc Markdown (anchors, then tables of fields, enum values and
methods) and Markdown holding ``protobuf`` code blocks. Both become the same :class:`SeedDoc`,
so the conformance test can compare them with the compiled descriptors.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

SCALARS = {
    "double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32",
    "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes",
}  # fmt: skip


@dataclass
class SeedField:
    name: str
    type: str  # a scalar name or a fully qualified message/enum name
    label: str  # "repeated" or ""
    description: str = ""


@dataclass
class SeedMessage:
    full_name: str
    description: str = ""
    fields: list[SeedField] = field(default_factory=list)
    file: str = ""


@dataclass
class SeedEnum:
    full_name: str
    description: str = ""
    values: list[tuple[str, int, str]] = field(default_factory=list)
    file: str = ""


@dataclass
class SeedMethod:
    name: str
    request: str
    response: str
    description: str = ""
    client_streaming: bool = False
    server_streaming: bool = False


@dataclass
class SeedService:
    full_name: str
    description: str = ""
    methods: list[SeedMethod] = field(default_factory=list)
    file: str = ""


@dataclass
class SeedDoc:
    path: Path
    messages: dict[str, SeedMessage] = field(default_factory=dict)
    enums: dict[str, SeedEnum] = field(default_factory=dict)
    services: dict[str, SeedService] = field(default_factory=dict)


def seed_paths(seeds_dir: Path) -> list[Path]:
    """The seed documents in their numbered order."""
    return sorted(p for p in seeds_dir.glob("[0-9][0-9][0-9]_*.txt"))


def parse_seed(path: Path, package: str = "") -> SeedDoc:
    """Parse one seed document; ``package`` qualifies names in documents that give none."""
    text = path.read_text(encoding="utf-8")
    if "```protobuf" in text:
        return _parse_proto_blocks(path, text, package)
    return _parse_protoc_gen_doc(path, text)


# --- protoc-gen-doc Markdown -------------------------------------------------------------------

_ANCHOR = re.compile(r'^<a name="([^"]+)"\s*/?>(?:</a>)?\s*$')
_LINK = re.compile(r"\[([^\]]*)\]\(#([^)]*)\)")


def _clean(text: str) -> str:
    return html.unescape(text.replace("<br>", "\n")).strip()


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _link(cell: str) -> tuple[str, str]:
    match = _LINK.search(cell)
    if not match:
        return cell.strip(), ""
    return match.group(1), match.group(2)


def _qualify_type(cell: str) -> str:
    text, target = _link(cell)
    if text in SCALARS:
        return text
    return _anchor_name(target) if target else text


def _anchor_name(anchor: str) -> str:
    # Newer generators spell "pkg.Msg" anchors as "pkg-Msg"; names never contain dashes.
    return anchor if "." in anchor else anchor.replace("-", ".")


def _parse_protoc_gen_doc(path: Path, text: str) -> SeedDoc:
    doc = SeedDoc(path)
    lines = text.splitlines()
    current_file = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## ") and line.strip().endswith(".proto"):
            current_file = line[3:].strip()
        anchor = _ANCHOR.match(line.strip())
        full_name = _anchor_name(anchor.group(1)) if anchor else ""
        if "." not in full_name or full_name.endswith(".proto") or "value.types" in full_name:
            i += 1
            continue
        i += 1
        while i < len(lines) and not lines[i].startswith("### "):
            i += 1
        i += 1  # the heading
        description: list[str] = []
        while i < len(lines) and not lines[i].startswith("|") and not _ANCHOR.match(lines[i]):
            if lines[i].startswith("## "):
                break
            description.append(lines[i])
            i += 1
        desc = _clean("\n".join(description))
        table: list[list[str]] = []
        while i < len(lines) and lines[i].startswith("|"):
            table.append(_cells(lines[i]))
            i += 1
        header = table[0] if table else []
        rows = table[2:]
        if header[:2] == ["Name", "Number"]:
            doc.enums[full_name] = SeedEnum(
                full_name, desc, [(r[0], int(r[1]), _clean(r[2])) for r in rows], current_file
            )
        elif header[:1] == ["Method Name"]:
            package = full_name.rsplit(".", 1)[0]
            service = SeedService(full_name, desc, file=current_file)
            for r in rows:
                request = _qualify_type(r[1])
                # The response links of some documents point at the request; the text is right.
                response_text, _ = _link(r[2])
                response = _qualify_name(response_text, package)
                service.methods.append(SeedMethod(r[0], request, response, _clean(r[3])))
            doc.services[full_name] = service
        else:
            fields = [SeedField(r[0], _qualify_type(r[1]), r[2], _clean(r[3])) for r in rows]
            doc.messages[full_name] = SeedMessage(full_name, desc, fields, current_file)
    return doc


def _qualify_name(name: str, package: str) -> str:
    if name in SCALARS or name.startswith("google.protobuf.") or "." in name:
        return name
    return f"{package}.{name}"


# --- Markdown with protobuf code blocks --------------------------------------------------------

_BLOCK = re.compile(r"```protobuf\n(.*?)```", re.S)
_DECL = re.compile(r"^\s*(message|enum|service)\s+(\w+)\s*\{")
_FIELD = re.compile(r"^\s*(repeated\s+)?([\w.]+)\s+(\w+)\s*=\s*(\d+);\s*(?://\s*(.*))?$")
_ENUM_VALUE = re.compile(r"^\s*(\w+)\s*=\s*(-?\d+);\s*(?://\s*(.*))?$")
_RPC = re.compile(
    r"^\s*rpc\s+(\w+)\s*\(\s*(stream\s+)?([\w.]+)\s*\)\s*returns\s*\(\s*(stream\s+)?([\w.]+)\s*\)"
)


def _parse_proto_blocks(path: Path, text: str, package: str) -> SeedDoc:
    doc = SeedDoc(path)
    pending_comment: list[str] = []
    for block in _BLOCK.findall(text):
        current: SeedMessage | SeedEnum | SeedService | None = None
        for line in block.splitlines():
            stripped = line.strip()
            if stripped.startswith("//"):
                pending_comment.append(stripped.lstrip("/").strip())
                continue
            decl = _DECL.match(line)
            if decl:
                kind, name = decl.groups()
                full = f"{package}.{name}"
                comment = "\n".join(pending_comment)
                if kind == "message":
                    current = doc.messages[full] = SeedMessage(full, comment)
                elif kind == "enum":
                    current = doc.enums[full] = SeedEnum(full, comment)
                else:
                    current = doc.services[full] = SeedService(full, comment)
                pending_comment = []
                continue
            if stripped == "}":
                current = None
                continue
            if isinstance(current, SeedMessage) and (m := _FIELD.match(line)):
                repeated, type_, name, _number, comment = m.groups()
                current.fields.append(
                    SeedField(
                        name,
                        _qualify_name(type_, package),
                        "repeated" if repeated else "",
                        (comment or "").strip(),
                    )
                )
            elif isinstance(current, SeedEnum) and (m := _ENUM_VALUE.match(line)):
                name, number, comment = m.groups()
                current.values.append((name, int(number), (comment or "").strip()))
            elif isinstance(current, SeedService) and (m := _RPC.match(line)):
                name, cstream, req, sstream, resp = m.groups()
                current.methods.append(
                    SeedMethod(
                        name,
                        _qualify_name(req, package),
                        _qualify_name(resp, package),
                        client_streaming=bool(cstream),
                        server_streaming=bool(sstream),
                    )
                )
            if stripped:
                pending_comment = []
    # Method descriptions are prose paragraphs: "**Create** are called when ...".
    for service in doc.services.values():
        for method in service.methods:
            prose = re.search(rf"^\*\*{method.name}\*\*[ \t]+((?:.+\n?)+)", text, re.M)
            if prose and prose.group(1).strip() != "[...].":
                method.description = " ".join(prose.group(1).split())
    return doc
