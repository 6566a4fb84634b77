"""The protobuf descriptors a gateway serves at ``/descriptors.binpb``, for tools that need the
schema as a file: ``buf curl --schema``, ``grpcurl -protoset``, code generators.

A ``google.protobuf.FileDescriptorSet``: the file of every service the registry holds, each
after the files it imports, and the ``google.rpc`` files of the details errors carry (a
``BadRequest`` in ``grpc-status-details-bin``). Where a given descriptor set (``portico gen``'s,
compiled with comments) holds a file, that copy is served; otherwise the registry's own
(from reflection, say), which lacks comments but is otherwise the same.
"""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf import descriptor, descriptor_pb2
from google.rpc import error_details_pb2, status_pb2

from app.gateway.registry import Registry

PATH = "/descriptors.binpb"
MEDIA_TYPE = "application/x-protobuf"
# What an error's details may be, beside the services' own files.
ERROR_FILES = (status_pb2.DESCRIPTOR, error_details_pb2.DESCRIPTOR)


def file_set(registry: Registry, given: bytes = b"") -> bytes:
    """The serialized set of ``registry``'s files, their imports and the error files; copies
    from ``given`` (serialized FileDescriptorSets, concatenated) where it holds the file."""
    known: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for file in descriptor_pb2.FileDescriptorSet.FromString(given).file:
        known.setdefault(file.name, file)
    ordered: list[descriptor_pb2.FileDescriptorProto] = []
    seen: set[str] = set()

    def add(file: descriptor.FileDescriptor) -> None:
        # Imports first: tools build a pool file by file and refuse a file before its imports.
        if file.name in seen:
            return
        seen.add(file.name)
        for imported in file.dependencies:
            add(imported)
        proto = known.get(file.name)
        if proto is None:
            proto = descriptor_pb2.FileDescriptorProto()
            file.CopyToProto(proto)
        ordered.append(proto)

    for served in _files(registry):
        add(served)
    return descriptor_pb2.FileDescriptorSet(file=ordered).SerializeToString()


def _files(registry: Registry) -> Iterable[descriptor.FileDescriptor]:
    for service in registry.services:
        yield service.descriptor.file
    yield from ERROR_FILES
