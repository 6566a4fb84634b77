"""The protos say what the seed documents say, on the wire of the original systems.

Each test collects every mismatch by name and fails with the whole list, so a reviewer sees
everything that is wrong at once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import FieldDescriptor

import gen
from app.gateway.registry import Registry
from tests.seed_docs import SeedDoc, parse_seed, seed_paths

# Package of the one seed document that names none: the original system's (tests/data/original).
UNNAMED_PACKAGE = "scheduler"

_SCALAR = {
    value: name.removeprefix("TYPE_").lower()
    for name, value in FieldDescriptor.__dict__.items()
    if name.startswith("TYPE_") and name not in {"TYPE_MESSAGE", "TYPE_ENUM", "TYPE_GROUP"}
}


@pytest.fixture(scope="module")
def descriptor_set() -> descriptor_pb2.FileDescriptorSet:
    return descriptor_pb2.FileDescriptorSet.FromString(Path(gen.DESCRIPTOR_SET).read_bytes())


@pytest.fixture(scope="module")
def pool(descriptor_set) -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_set.file:
        pool.Add(file)
    return pool


@pytest.fixture(scope="module")
def seeds(original_dir: Path) -> list[SeedDoc]:
    return [parse_seed(p, UNNAMED_PACKAGE) for p in seed_paths(original_dir / "seeds")]


@pytest.fixture(scope="module")
def wire(original_dir: Path) -> dict:
    return json.loads((original_dir / "wire.json").read_text())


def type_name(field: FieldDescriptor) -> str:
    """The field's type as the documents write it: a scalar name or a full message/enum name."""
    if field.message_type is not None:
        return field.message_type.full_name
    if field.enum_type is not None:
        return field.enum_type.full_name
    return _SCALAR[field.type]


def is_repeated(field: FieldDescriptor) -> bool:
    return field.is_repeated


def assert_none(problems: list[str]) -> None:
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems)


def test_seed_documents_were_all_read(seeds):
    assert len(seeds) == 5
    assert all(doc.messages and doc.services for doc in seeds), [d.path.name for d in seeds]


def test_every_documented_message_and_field_exists_with_its_type(seeds, pool):
    problems = []
    for doc in seeds:
        for message in doc.messages.values():
            try:
                desc = pool.FindMessageTypeByName(message.full_name)
            except KeyError:
                problems.append(f"{doc.path.name}: message {message.full_name} is missing")
                continue
            for seed_field in message.fields:
                field = desc.fields_by_name.get(seed_field.name)
                where = f"{doc.path.name}: {message.full_name}.{seed_field.name}"
                if field is None:
                    problems.append(f"{where} is missing")
                    continue
                if type_name(field) != seed_field.type:
                    problems.append(
                        f"{where}: type {type_name(field)}, documented {seed_field.type}"
                    )
                if is_repeated(field) != (seed_field.label == "repeated"):
                    problems.append(f"{where}: label differs from documented {seed_field.label!r}")
    assert_none(problems)


def test_every_documented_enum_value_exists_with_its_number(seeds, pool):
    problems = []
    for doc in seeds:
        for enum in doc.enums.values():
            try:
                desc = pool.FindEnumTypeByName(enum.full_name)
            except KeyError:
                problems.append(f"{doc.path.name}: enum {enum.full_name} is missing")
                continue
            for name, number, _ in enum.values:
                value = desc.values_by_name.get(name)
                if value is None or value.number != number:
                    got = None if value is None else value.number
                    problems.append(f"{enum.full_name}.{name}: number {got}, documented {number}")
    assert_none(problems)


def test_every_documented_rpc_exists_with_its_types(seeds, pool):
    problems = []
    for doc in seeds:
        for service in doc.services.values():
            try:
                desc = pool.FindServiceByName(service.full_name)
            except KeyError:
                problems.append(f"{doc.path.name}: service {service.full_name} is missing")
                continue
            for seed_method in service.methods:
                method = desc.methods_by_name.get(seed_method.name)
                where = f"{service.full_name}.{seed_method.name}"
                if method is None:
                    problems.append(f"{where} is missing")
                    continue
                if method.input_type.full_name != seed_method.request:
                    problems.append(f"{where}: request {method.input_type.full_name}")
                if method.output_type.full_name != seed_method.response:
                    problems.append(f"{where}: response {method.output_type.full_name}")
                # Documents in proto syntax show streaming; the others hide it (wire.json says).
                if seed_method.client_streaming and not method.client_streaming:
                    problems.append(f"{where}: documented client streaming")
                if seed_method.server_streaming and not method.server_streaming:
                    problems.append(f"{where}: documented server streaming")
    assert_none(problems)


def test_packages_are_those_of_the_original_systems(wire, descriptor_set):
    ours = {f.package for f in descriptor_set.file if not f.package.startswith("google.")}
    theirs = {p for packages in wire["packages"].values() for p in packages}
    assert ours == theirs


def test_field_numbers_and_wire_types_match_the_original_systems(wire, pool):
    problems = []
    for message_name, wire_fields in wire["fields"].items():
        try:
            desc = pool.FindMessageTypeByName(message_name)
        except KeyError:
            problems.append(f"message {message_name} is missing")
            continue
        if {f.name for f in desc.fields} != {f["name"] for f in wire_fields}:
            problems.append(f"{message_name}: fields differ from the original")
        for wire_field in wire_fields:
            field = desc.fields_by_name.get(wire_field["name"])
            where = f"{message_name}.{wire_field['name']}"
            if field is None:
                continue
            if field.number != wire_field["number"]:
                problems.append(f"{where}: number {field.number}, original {wire_field['number']}")
            if type_name(field) != wire_field["type"]:
                problems.append(f"{where}: type {type_name(field)}, original {wire_field['type']}")
            if is_repeated(field) != (wire_field["label"] == "repeated"):
                problems.append(f"{where}: label differs from the original {wire_field['label']}")
            oneof = field.containing_oneof.name if field.containing_oneof else None
            if oneof != wire_field.get("oneof"):
                problems.append(f"{where}: oneof {oneof}, original {wire_field.get('oneof')}")
            if "map" in wire_field:
                entry = field.message_type
                if entry is None or not entry.GetOptions().map_entry:
                    problems.append(f"{where}: not a map")
                else:
                    key, value = (entry.fields_by_name["key"], entry.fields_by_name["value"])
                    if (type_name(key), type_name(value)) != tuple(wire_field["map"].values()):
                        problems.append(f"{where}: map<{type_name(key)}, {type_name(value)}>")
    assert_none(problems)


def test_enum_numbers_match_the_original_systems(wire, pool):
    problems = []
    for enum_name, values in wire["enums"].items():
        try:
            desc = pool.FindEnumTypeByName(enum_name)
        except KeyError:
            problems.append(f"enum {enum_name} is missing")
            continue
        ours = {v.name: v.number for v in desc.values}
        if ours != values:
            problems.append(f"{enum_name}: {ours}, original {values}")
    assert_none(problems)


def test_rpcs_match_the_original_paths_streaming_and_bindings(wire):
    registry = Registry.from_package("gen")
    problems = []
    theirs = {rpc["grpc_path"]: (name, rpc) for name, rpc in wire["rpcs"].items()}
    for path in set(registry.methods_by_path) ^ set(theirs):
        problems.append(f"{path}: served by only one of Portico and the original")
    for path, (name, rpc) in theirs.items():
        method = registry.methods_by_path.get(path)
        if method is None:
            continue
        if method.full_name != name:
            problems.append(f"{path}: named {method.full_name}, original {name}")
        if (method.client_streaming, method.server_streaming) != (
            rpc["client_streaming"],
            rpc["server_streaming"],
        ):
            problems.append(f"{name}: streaming {method.kind} differs from the original")
        if method.descriptor.input_type.full_name != rpc["request"]:
            problems.append(f"{name}: request {method.descriptor.input_type.full_name}")
        if method.descriptor.output_type.full_name != rpc["response"]:
            problems.append(f"{name}: response {method.descriptor.output_type.full_name}")
        ours = {(b.verb, b.path, b.body) for b in method.http}
        for binding in rpc["http"]:
            if (binding["method"], binding["path"], binding["body"]) not in ours:
                problems.append(f"{name}: original binding {binding} is missing")
        if not method.http:
            problems.append(f"{name}: has no google.api.http binding")
    assert_none(problems)


def test_designed_bindings_follow_the_resource_style(wire):
    """Where the originals had no binding: GET for scalar-only reads, POST otherwise, under /v1."""
    registry = Registry.from_package("gen")
    problems = []
    for name, rpc in wire["rpcs"].items():
        if rpc["http"]:
            continue
        method = registry.methods_by_path[rpc["grpc_path"]]
        if any(not b.path.startswith("/v1/") for b in method.http):
            problems.append(f"{name}: a binding is not under /v1/")
        # The style binds the primary rule; additional bindings (a GET for a browser's
        # EventSource, say) are deliberate extras.
        for binding in method.http[:1]:
            if not binding.path.startswith("/v1/"):
                problems.append(f"{name}: {binding.path} is not under /v1/")
            if binding.verb not in {"GET", "POST"}:
                problems.append(f"{name}: {binding.verb} {binding.path}")
            if binding.verb == "GET" and any(
                f.message_type is not None for f in method.descriptor.input_type.fields
            ):
                problems.append(f"{name}: GET for a request with message fields")
            if binding.verb == "POST" and binding.body != "*":
                problems.append(f"{name}: POST {binding.path} without body '*'")
    assert_none(problems)


def test_the_misspelled_original_delete_route_has_a_correct_twin():
    registry = Registry.from_package("gen")
    method = registry.method("/edgeproto.CloudletApi/DeleteCloudlet")
    # The correct route first: it names the operation in the OpenAPI document.
    assert [b.path for b in method.http] == ["/delete/cloudlet", "/delete/cloudet"]


def _comments(file: descriptor_pb2.FileDescriptorProto) -> dict[str, str]:
    """Leading comments by full name (``pkg.Msg``, ``pkg.Msg.field``, ``pkg.Svc.Method``)."""
    by_path = {tuple(loc.path): loc.leading_comments for loc in file.source_code_info.location}
    found: dict[str, str] = {}

    def message(msg, prefix, path):
        name = f"{prefix}.{msg.name}"
        found[name] = by_path.get(path, "")
        for i, field in enumerate(msg.field):
            found[f"{name}.{field.name}"] = by_path.get((*path, 2, i), "")
        for i, nested in enumerate(msg.nested_type):
            message(nested, name, (*path, 3, i))
        for i, enum in enumerate(msg.enum_type):
            enum_values(enum, name, (*path, 4, i))

    def enum_values(enum, prefix, path):
        name = f"{prefix}.{enum.name}"
        found[name] = by_path.get(path, "")
        for i, value in enumerate(enum.value):
            found[f"{name}.{value.name}"] = by_path.get((*path, 2, i), "")

    for i, msg in enumerate(file.message_type):
        message(msg, file.package, (4, i))
    for i, enum in enumerate(file.enum_type):
        enum_values(enum, file.package, (5, i))
    for i, service in enumerate(file.service):
        found[f"{file.package}.{service.name}"] = by_path.get((6, i), "")
        for j, method in enumerate(service.method):
            found[f"{file.package}.{service.name}.{method.name}"] = by_path.get((6, i, 2, j), "")
    return found


def _words(text: str) -> str:
    return " ".join(text.split())


def test_documented_descriptions_survive_as_comments(seeds, descriptor_set):
    comments: dict[str, str] = {}
    for file in descriptor_set.file:
        comments.update(_comments(file))
    documented: dict[str, str] = {}
    for doc in seeds:
        for m in doc.messages.values():
            documented[m.full_name] = m.description
            documented.update({f"{m.full_name}.{f.name}": f.description for f in m.fields})
        for e in doc.enums.values():
            documented[e.full_name] = e.description
            documented.update({f"{e.full_name}.{name}": text for name, _, text in e.values})
        for s in doc.services.values():
            documented[s.full_name] = s.description
            documented.update({f"{s.full_name}.{m.name}": m.description for m in s.methods})
    problems = [
        f"{name}: comment {_words(comments.get(name, ''))!r}, documented {_words(text)!r}"
        for name, text in documented.items()
        # Map entry messages are implicit in proto syntax and carry no comment of their own.
        if text and not name.endswith("Entry") and _words(comments.get(name, "")) != _words(text)
    ]
    assert len(documented) > 500
    assert_none(problems)
