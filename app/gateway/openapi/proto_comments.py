"""The comments of a descriptor set's source info, by the full name of what they describe.

A descriptor set compiled with ``--include_source_info`` keeps the comment written above each
message, field, enum, enum value, service and method; the OpenAPI document and the stats
service's checks read them by full name.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

from google.protobuf import descriptor_pb2


def source_comments(descriptor_set: str | os.PathLike[str] | bytes) -> dict[str, str]:
    """Comments by full name (enum values as ``Enum.VALUE``) from a descriptor set's source info."""
    data = descriptor_set
    if not isinstance(data, bytes):
        data = Path(data).read_bytes()
    files = descriptor_pb2.FileDescriptorSet.FromString(data).file
    found: dict[str, str] = {}
    for file in files:
        by_path = {tuple(loc.path): _comment(loc) for loc in file.source_code_info.location}
        for name, path in _elements(file):
            text = by_path.get(path)
            if text:
                found[name] = text
    return found


def _comment(location: descriptor_pb2.SourceCodeInfo.Location) -> str:
    text = location.leading_comments or location.trailing_comments
    return textwrap.dedent(text).strip()


def _elements(file: descriptor_pb2.FileDescriptorProto) -> Iterator[tuple[str, tuple[int, ...]]]:
    """(full name, source path) of every message, field, enum, value, service and method."""
    prefix = f"{file.package}." if file.package else ""
    for index, message in enumerate(file.message_type):
        yield from _message_elements(message, prefix, (4, index))
    for index, enum in enumerate(file.enum_type):
        yield from _enum_elements(enum, prefix, (5, index))
    for index, service in enumerate(file.service):
        name = prefix + service.name
        yield name, (6, index)
        for m_index, method in enumerate(service.method):
            yield f"{name}.{method.name}", (6, index, 2, m_index)


def _message_elements(
    message: descriptor_pb2.DescriptorProto, prefix: str, path: tuple[int, ...]
) -> Iterator[tuple[str, tuple[int, ...]]]:
    name = prefix + message.name
    yield name, path
    for index, field_proto in enumerate(message.field):
        yield f"{name}.{field_proto.name}", (*path, 2, index)
    for index, nested in enumerate(message.nested_type):
        yield from _message_elements(nested, f"{name}.", (*path, 3, index))
    for index, enum in enumerate(message.enum_type):
        yield from _enum_elements(enum, f"{name}.", (*path, 4, index))


def _enum_elements(
    enum: descriptor_pb2.EnumDescriptorProto, prefix: str, path: tuple[int, ...]
) -> Iterator[tuple[str, tuple[int, ...]]]:
    name = prefix + enum.name
    yield name, path
    for index, value in enumerate(enum.value):
        yield f"{name}.{value.name}", (*path, 2, index)
