"""gRPC server reflection, ``grpc.reflection.v1`` and ``grpc.reflection.v1alpha`` both.

grpcio-reflection serves only v1alpha, and its symbol lookup is the descriptor pool's, which
knows messages, fields, enums and services but not methods: ``grpcurl describe
pkg.Service.Method`` answered NOT_FOUND. This servicer answers both versions from one place and
resolves a method to the file of its service, as the reflection protocol asks.

The two versions are the same protocol under two package names (same messages, same field
numbers), so one implementation on v1alpha's message classes serves both wire formats. The v1
file itself is v1alpha's descriptor renamed, so reflection also describes the v1 service.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import grpc
from google.protobuf import descriptor, descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection_pb2 as pb

V1ALPHA = "grpc.reflection.v1alpha.ServerReflection"
V1 = "grpc.reflection.v1.ServerReflection"
SERVICE_NAMES = (V1, V1ALPHA)
_METHOD = "ServerReflectionInfo"


@functools.cache
def _v1_pool() -> descriptor_pool.DescriptorPool:
    """A pool holding ``grpc/reflection/v1/reflection.proto``: v1alpha's file, renamed."""
    proto = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(proto)
    old, new = f".{proto.package}.", ".grpc.reflection.v1."
    proto.name = "grpc/reflection/v1/reflection.proto"
    proto.package = "grpc.reflection.v1"
    for message in proto.message_type:
        for fd in message.field:
            if fd.HasField("type_name"):
                fd.type_name = fd.type_name.replace(old, new)
    for service in proto.service:
        for method in service.method:
            method.input_type = method.input_type.replace(old, new)
            method.output_type = method.output_type.replace(old, new)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return pool


def v1_file() -> descriptor.FileDescriptor:
    """``grpc/reflection/v1/reflection.proto``, whose service answers as v1alpha's does."""
    return _v1_pool().FindFileByName("grpc/reflection/v1/reflection.proto")


class Reflection:
    """Answers reflection requests about ``service_names`` from the default descriptor pool."""

    def __init__(self, service_names: Iterable[str]) -> None:
        self._services = tuple(sorted({*service_names, *SERVICE_NAMES}))
        self._pools = (descriptor_pool.Default(), _v1_pool())

    def handlers(self) -> tuple[grpc.GenericRpcHandler, ...]:
        """One generic handler per protocol version, to add to a grpc.aio server."""
        return tuple(
            grpc.method_handlers_generic_handler(
                name,
                {
                    _METHOD: grpc.stream_stream_rpc_method_handler(
                        self.info,
                        request_deserializer=pb.ServerReflectionRequest.FromString,
                        response_serializer=pb.ServerReflectionResponse.SerializeToString,
                    )
                },
            )
            for name in SERVICE_NAMES
        )

    async def info(
        self, requests: AsyncIterator[pb.ServerReflectionRequest], context: Any
    ) -> AsyncIterator[pb.ServerReflectionResponse]:
        """The bidirectional ``ServerReflectionInfo``: one response per request, in order."""
        async for request in requests:
            yield self.answer(request)

    def answer(self, request: pb.ServerReflectionRequest) -> pb.ServerReflectionResponse:
        """The response to one reflection request."""
        asked = request.WhichOneof("message_request")
        if asked == "list_services":
            listed = pb.ListServiceResponse(
                service=[pb.ServiceResponse(name=name) for name in self._services]
            )
            return pb.ServerReflectionResponse(
                list_services_response=listed, original_request=request
            )
        if asked == "file_by_filename":
            found = self._find(lambda pool: pool.FindFileByName(request.file_by_filename))
        elif asked == "file_containing_symbol":
            found = self._find(lambda pool: _file_of_symbol(pool, request.file_containing_symbol))
        elif asked == "file_containing_extension":
            wanted = request.file_containing_extension
            found = self._find(
                lambda pool: pool.FindFileContainingSymbol(
                    pool.FindExtensionByNumber(
                        pool.FindMessageTypeByName(wanted.containing_type), wanted.extension_number
                    ).full_name
                )
            )
        elif asked == "all_extension_numbers_of_type":
            return self._extension_numbers(request)
        else:
            return _error(request, grpc.StatusCode.INVALID_ARGUMENT, "no request in the message")
        if found is None:
            return _error(request, grpc.StatusCode.NOT_FOUND, "not found")
        return pb.ServerReflectionResponse(
            file_descriptor_response=pb.FileDescriptorResponse(
                file_descriptor_proto=_with_dependencies(found)
            ),
            original_request=request,
        )

    def _find(
        self, lookup: Callable[[descriptor_pool.DescriptorPool], descriptor.FileDescriptor]
    ) -> descriptor.FileDescriptor | None:
        for pool in self._pools:
            try:
                return lookup(pool)
            except KeyError:
                continue
        return None

    def _extension_numbers(self, request: pb.ServerReflectionRequest) -> Any:
        name = request.all_extension_numbers_of_type
        for pool in self._pools:
            try:
                message = pool.FindMessageTypeByName(name)
            except KeyError:
                continue
            numbers = sorted(ext.number for ext in pool.FindAllExtensions(message))
            return pb.ServerReflectionResponse(
                all_extension_numbers_response=pb.ExtensionNumberResponse(
                    base_type_name=message.full_name, extension_number=numbers
                ),
                original_request=request,
            )
        return _error(request, grpc.StatusCode.NOT_FOUND, "not found")


def _file_of_symbol(pool: descriptor_pool.DescriptorPool, symbol: str) -> descriptor.FileDescriptor:
    """The file declaring ``symbol``: a type, field, enum value, service, or a service's method
    (which the pool's own lookup does not know). KeyError if none does."""
    try:
        return pool.FindFileContainingSymbol(symbol)
    except KeyError:
        service_name, _, method = symbol.rpartition(".")
        service = pool.FindServiceByName(service_name)  # KeyError when it is not a service
        if method not in service.methods_by_name:
            raise
        return service.file


def _with_dependencies(file: descriptor.FileDescriptor) -> list[bytes]:
    """The file and every file it imports, transitively, serialized (the file first)."""
    found: dict[str, descriptor.FileDescriptor] = {}
    pending = [file]
    while pending:
        current = pending.pop()
        if current.name in found:
            continue
        found[current.name] = current
        pending.extend(current.dependencies)
    serialized = []
    for each in found.values():
        proto = descriptor_pb2.FileDescriptorProto()
        each.CopyToProto(proto)
        serialized.append(proto.SerializeToString())
    return serialized


def _error(
    request: pb.ServerReflectionRequest, code: grpc.StatusCode, message: str
) -> pb.ServerReflectionResponse:
    return pb.ServerReflectionResponse(
        error_response=pb.ErrorResponse(error_code=code.value[0], error_message=message),
        original_request=request,
    )
