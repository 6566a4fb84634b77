"""An upstream's descriptors: asked of its server reflection (v1, else v1alpha), or read from a
FileDescriptorSet, into a descriptor pool of its own.

The reflection client is one bidirectional call: ``list_services``, then
``file_containing_symbol`` for each service, then ``file_by_filename`` for any dependency the
server left out (Go's server sends each file once per stream; Python's sends all of them every
time). What an upstream may send is bounded (files, bytes, time), as any input is.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection_pb2 as pb

# Both versions are one protocol under two package names: v1alpha's messages serve both.
V1_PATH = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
V1ALPHA_PATH = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
REFLECTION_SERVICES = frozenset(
    {"grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}
)
MAX_FILES = 2_000
MAX_BYTES = 64 * 1024 * 1024


class _NotServed(Exception):
    """The upstream does not serve this version of reflection."""


class DescriptorError(Exception):
    """The descriptors could not be had or do not make a consistent set; says why."""


@dataclass(frozen=True)
class Descriptors:
    """One upstream's services, in a pool of their files."""

    pool: descriptor_pool.DescriptorPool
    services: tuple[str, ...]  # full names, in the order the upstream listed them
    files: tuple[descriptor_pb2.FileDescriptorProto, ...]  # dependencies first
    digest: str  # changes when any file or the service list does

    def file_set(self) -> bytes:
        """The files as a serialized FileDescriptorSet (what OpenAPI reads comments from)."""
        return descriptor_pb2.FileDescriptorSet(file=self.files).SerializeToString()


def from_file_set(data: bytes, what: str) -> Descriptors:
    """Every service of a FileDescriptorSet (built with ``--include_imports``)."""
    try:
        files = descriptor_pb2.FileDescriptorSet.FromString(data).file
    except Exception as exc:  # the parser's errors have no common base worth naming
        raise DescriptorError(f"{what} is not a FileDescriptorSet ({exc})") from None
    services = [f"{f.package}.{s.name}" if f.package else s.name for f in files for s in f.service]
    return _descriptors(files, services, what)


async def from_reflection(channel: grpc.aio.Channel, timeout: float, what: str) -> Descriptors:
    """Every service the upstream lists (but reflection itself), with the files they need."""
    try:
        try:
            return await _reflect(channel, V1_PATH, timeout, what)
        except _NotServed:
            return await _reflect(channel, V1ALPHA_PATH, timeout, what)
    except grpc.aio.AioRpcError as exc:
        raise DescriptorError(
            f"{what}: server reflection failed: {exc.code().name} {exc.details()}"
        ) from None


async def _reflect(channel: grpc.aio.Channel, path: str, timeout: float, what: str) -> Descriptors:
    call = channel.stream_stream(
        path,
        request_serializer=pb.ServerReflectionRequest.SerializeToString,
        response_deserializer=pb.ServerReflectionResponse.FromString,
    )(timeout=timeout)
    try:
        try:
            await call.write(pb.ServerReflectionRequest(list_services=""))
            listed = await _answer(call, what)
        except grpc.aio.AioRpcError as exc:
            # A server without this version answers UNIMPLEMENTED; when it does so while the
            # first request is still being written, grpcio reports the failed write as
            # INTERNAL instead. Either way the other version is worth asking.
            if exc.code() in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.INTERNAL):
                raise _NotServed from None
            raise
        services = [s.name for s in listed.list_services_response.service]
        services = [s for s in services if s not in REFLECTION_SERVICES]
        found: dict[str, descriptor_pb2.FileDescriptorProto] = {}
        size = 0
        asks = [pb.ServerReflectionRequest(file_containing_symbol=s) for s in services]
        while asks:
            for ask in asks:
                await call.write(ask)
                answer = await _answer(call, what)
                for raw in answer.file_descriptor_response.file_descriptor_proto:
                    size += len(raw)
                    if size > MAX_BYTES or len(found) >= MAX_FILES:
                        raise DescriptorError(
                            f"{what}: reflection sent more than {MAX_FILES} files or "
                            f"{MAX_BYTES} bytes"
                        )
                    file = descriptor_pb2.FileDescriptorProto.FromString(raw)
                    found.setdefault(file.name, file)
            missing = {d for f in found.values() for d in f.dependency} - found.keys()
            asks = [pb.ServerReflectionRequest(file_by_filename=name) for name in sorted(missing)]
        await call.done_writing()
    finally:
        call.cancel()
    return _descriptors(found.values(), services, what)


async def _answer(call: grpc.aio.StreamStreamCall, what: str) -> pb.ServerReflectionResponse:
    answer = await call.read()
    if answer is grpc.aio.EOF:
        raise DescriptorError(f"{what}: reflection ended the stream early")
    assert isinstance(answer, pb.ServerReflectionResponse)
    if answer.HasField("error_response"):
        error = answer.error_response
        raise DescriptorError(
            f"{what}: reflection answered error {error.error_code}: {error.error_message}"
        )
    return answer


def _descriptors(
    files: Iterable[descriptor_pb2.FileDescriptorProto], services: list[str], what: str
) -> Descriptors:
    by_name = {f.name: f for f in files}
    ordered: list[descriptor_pb2.FileDescriptorProto] = []
    placed: set[str] = set()

    def place(name: str, chain: tuple[str, ...]) -> None:
        if name in placed:
            return
        if name in chain:
            raise DescriptorError(f"{what}: {name} imports itself through {' → '.join(chain)}")
        file = by_name.get(name) or _well_known(name)
        if file is None:
            raise DescriptorError(f"{what}: {chain[-1]} imports {name}, which was not given")
        for dependency in file.dependency:
            place(dependency, (*chain, name))
        placed.add(name)
        ordered.append(file)

    for name in sorted(by_name):
        place(name, ())
    pool = descriptor_pool.DescriptorPool()
    try:
        for file in ordered:
            pool.Add(file)
        for service in services:
            pool.FindServiceByName(service)
    except (KeyError, TypeError, ValueError) as exc:
        raise DescriptorError(f"{what}: the descriptors do not fit together ({exc})") from None
    digest = hashlib.sha256()
    for file in ordered:
        digest.update(file.SerializeToString(deterministic=True))
    digest.update("\n".join(services).encode())
    return Descriptors(pool, tuple(services), tuple(ordered), digest.hexdigest())


_WELL_KNOWN = ("google/protobuf/", "google/api/", "google/rpc/", "google/type/")


def _well_known(name: str) -> descriptor_pb2.FileDescriptorProto | None:
    """A file of protobuf's or googleapis-common-protos' modules (google/protobuf/*,
    google/api/*, ...), for a set built without ``--include_imports``."""
    if not name.startswith(_WELL_KNOWN) or not re.fullmatch(r"[a-z0-9_/]+\.proto", name):
        return None
    try:
        module = importlib.import_module(name.removesuffix(".proto").replace("/", ".") + "_pb2")
    except (ImportError, ValueError):
        return None
    found = module.DESCRIPTOR
    proto = descriptor_pb2.FileDescriptorProto()
    found.CopyToProto(proto)
    return proto
