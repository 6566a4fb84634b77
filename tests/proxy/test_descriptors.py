"""Descriptors as an upstream may hand them over: in any order, with dependencies missing or
going round in circles; each problem named, none crashing the proxy."""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2

from app.proxy.descriptors import DescriptorError, from_file_set


def _file(name: str, *dependencies: str, service: str = "") -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(
        name=name, package="t", dependency=dependencies, syntax="proto3"
    )
    file.message_type.add(name=name.split(".")[0].capitalize())
    if service:
        method = file.service.add(name=service).method.add(name="Get")
        method.input_type = method.output_type = f".t.{file.message_type[0].name}"
    return file


def _set(*files: descriptor_pb2.FileDescriptorProto) -> bytes:
    return descriptor_pb2.FileDescriptorSet(file=files).SerializeToString()


def test_files_in_any_order_are_added_dependencies_first() -> None:
    found = from_file_set(
        _set(_file("a.proto", "b.proto", service="Svc"), _file("b.proto")), "the set"
    )
    assert [f.name for f in found.files] == ["b.proto", "a.proto"]
    assert found.services == ("t.Svc",)
    assert found.pool.FindMethodByName("t.Svc.Get").input_type.name == "A"


def test_a_missing_dependency_is_named() -> None:
    with pytest.raises(DescriptorError, match=r"a.proto imports gone.proto, which was not given"):
        from_file_set(_set(_file("a.proto", "gone.proto")), "the set")


def test_an_import_cycle_is_named() -> None:
    cycle = _set(_file("a.proto", "b.proto"), _file("b.proto", "a.proto"))
    with pytest.raises(DescriptorError, match="imports itself"):
        from_file_set(cycle, "the set")


def test_well_known_files_left_out_of_a_set_are_taken_from_this_process() -> None:
    found = from_file_set(_set(_file("a.proto", "google/protobuf/empty.proto")), "the set")
    assert [f.name for f in found.files] == ["google/protobuf/empty.proto", "a.proto"]


def test_the_digest_changes_with_the_descriptors() -> None:
    one = from_file_set(_set(_file("a.proto", service="Svc")), "one")
    same = from_file_set(_set(_file("a.proto", service="Svc")), "same")
    other = from_file_set(_set(_file("a.proto", service="Other")), "other")
    assert one.digest == same.digest != other.digest
