"""``portico list`` and ``portico describe``: what a gRPC server serves, asked of its server
reflection (grpcio-reflection's client), as ``grpcurl list`` and ``grpcurl describe`` do.

``portico call`` asks the same when a method is none of Portico's own (a server behind
``portico proxy``, say). Descriptors that come by reflection carry no comments (grpcio's
reflection sends none); the comments of Portico's own APIs come from the descriptor set
installed with the package.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import grpc
from google.protobuf import descriptor, descriptor_pool
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from app.calls.close_names import close_names, did_you_mean
from app.cli.client_calls import grpc_channel, unreachable_or_failed
from app.gateway.openapi.proto_comments import source_comments
from app.gateway.registry import Method, Registry, http_bindings

REFLECTION_SECONDS = 10.0  # for each question to the server's reflection
_F = descriptor.FieldDescriptor
_SCALARS = {
    value: name.removeprefix("TYPE_").lower()
    for name, value in vars(_F).items()
    if name.startswith("TYPE_") and name not in ("TYPE_MESSAGE", "TYPE_ENUM", "TYPE_GROUP")
}


class NotFound(LookupError):
    """The server's reflection does not know the name; says the close ones it does."""


class _Details(NamedTuple):
    """A call's details as grpc's interceptors read them (by attribute)."""

    method: str
    timeout: float | None
    metadata: Any
    credentials: Any
    wait_for_ready: Any
    compression: Any


class _Deadline(grpc.StreamStreamClientInterceptor):
    """Every reflection call ends within ``seconds``: a server that never answers fails it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        timed = _Details(
            details.method, self.seconds, details.metadata, details.credentials,
            details.wait_for_ready, details.compression,
        )  # fmt: skip
        return continuation(timed, requests)


@dataclass
class Reflected:
    """A server's services and the pool of their descriptors, filled as they are asked for."""

    target: str
    services: list[str]
    pool: descriptor_pool.DescriptorPool

    def method(self, service: str, name: str) -> Method:
        """``service``'s method ``name`` as ``portico call`` calls it; NotFound naming the
        close names."""
        if service not in self.services:
            close = close_names(service, self.services)
            raise NotFound(f"{self.target} serves no service {service!r}{did_you_mean(close)}")
        found = self.pool.FindServiceByName(service)
        methods = [m.name for m in found.methods]
        if name not in methods:
            close = [f"{service}/{m}" for m in close_names(name, methods)]
            raise NotFound(f"{service} has no method {name!r}{did_you_mean(close)}")
        return Registry([found.file], only={service}).method(f"/{service}/{name}")

    def find(self, symbol: str) -> tuple[str, Any]:
        """What ``symbol`` names (a service, method, message, enum or field) and its descriptor."""
        finders: tuple[tuple[str, Callable[[str], Any]], ...] = (
            ("service", self.pool.FindServiceByName),
            ("method", self.pool.FindMethodByName),
            ("message", self.pool.FindMessageTypeByName),
            ("enum", self.pool.FindEnumTypeByName),
            ("field", self.pool.FindFieldByName),
        )
        for kind, finder in finders:
            try:
                return kind, finder(symbol)
            except KeyError:
                continue
        # grpcio's reflection resolves services and messages, not what is inside them.
        parent, _, name = symbol.rpartition(".")
        for kind, finder, members in (
            ("method", self.pool.FindServiceByName, "methods_by_name"),
            ("field", self.pool.FindMessageTypeByName, "fields_by_name"),
        ):
            try:
                return kind, getattr(finder(parent), members)[name]
            except KeyError:
                continue
        close = close_names(symbol, self.services)
        raise NotFound(f"{self.target} knows no symbol {symbol!r}{did_you_mean(close)}")


def reflected(target: str, roots: bytes | None = None) -> Reflected:
    """Ask the server at ``target`` what it serves; ConnectionError, NotGrpc or CallFailed
    when it cannot say."""
    channel = grpc.intercept_channel(grpc_channel(target, roots), _Deadline(REFLECTION_SECONDS))
    database = ProtoReflectionDescriptorDatabase(channel)
    try:
        services = sorted(database.get_services())
    except grpc.RpcError as exc:
        raise unreachable_or_failed(exc, target) from None
    return Reflected(target, services, descriptor_pool.DescriptorPool(database))


def asking(reflection: Reflected, ask: Callable[[], Any]) -> Any:
    """``ask()``, a question to the server's reflection; its failures said as a call's."""
    try:
        return ask()
    except grpc.RpcError as exc:
        raise unreachable_or_failed(exc, reflection.target) from None


def listed(reflection: Reflected, service: str | None) -> list[str]:
    """The services, or ``service``'s methods as ``package.Service.Method``."""
    if service is None:
        return reflection.services
    kind, found = reflection.find(service)
    if kind != "service":
        raise NotFound(f"{service} is a {kind}, not a service")
    return [m.full_name for m in found.methods]


def described(reflection: Reflected, symbol: str) -> str:
    """``symbol`` as grpcurl describes it: what it is, then its definition in .proto syntax."""
    kind, found = reflection.find(symbol)
    text = _DESCRIBE[kind](found, _comments())
    return f"{found.full_name} is a {kind}:\n{text}"


@functools.cache
def _comments() -> dict[str, str]:
    """The comments of Portico's own APIs, from the descriptor set installed with gen/."""
    import gen

    path = Path(next(iter(gen.__path__))) / "portico.binpb"
    return source_comments(path) if path.is_file() else {}


def _commented(name: str, comments: dict[str, str], indent: str = "") -> Iterator[str]:
    for line in comments.get(name, "").splitlines():
        yield f"{indent}// {line}".rstrip()


def _service(found: descriptor.ServiceDescriptor, comments: dict[str, str]) -> str:
    lines = [*_commented(found.full_name, comments), f"service {found.name} {{"]
    for method in found.methods:
        lines += _method_lines(method, comments, "  ")
    return "\n".join([*lines, "}"])


def _method(found: descriptor.MethodDescriptor, comments: dict[str, str]) -> str:
    return "\n".join(_method_lines(found, comments, ""))


def _method_lines(
    found: descriptor.MethodDescriptor, comments: dict[str, str], indent: str
) -> Iterable[str]:
    yield from _commented(found.full_name, comments, indent)
    takes = ("stream " if found.client_streaming else "") + found.input_type.full_name
    gives = ("stream " if found.server_streaming else "") + found.output_type.full_name
    yield f"{indent}rpc {found.name}({takes}) returns ({gives});"
    for binding in http_bindings(found):
        yield f"{indent}  // REST: {binding.verb} {binding.path}"


def _message(found: descriptor.Descriptor, comments: dict[str, str]) -> str:
    lines = [*_commented(found.full_name, comments), f"message {found.name} {{"]
    oneofs = {o.name: o for o in found.oneofs if not _synthetic(o)}
    shown: set[str] = set()
    for field in found.fields:
        group = field.containing_oneof
        if group is not None and group.name in oneofs:
            if group.name not in shown:
                shown.add(group.name)
                lines.append(f"  oneof {group.name} {{")
                for member in group.fields:
                    lines += _field_lines(member, comments, "    ")
                lines.append("  }")
            continue
        lines += _field_lines(field, comments, "  ")
    return "\n".join([*lines, "}"])


def _synthetic(oneof: descriptor.OneofDescriptor) -> bool:
    # proto3's `optional` makes a oneof of one field, named after it with a leading underscore.
    return len(oneof.fields) == 1 and oneof.name == f"_{oneof.fields[0].name}"


def _field(found: descriptor.FieldDescriptor, comments: dict[str, str]) -> str:
    return "\n".join(_field_lines(found, comments, ""))


def _field_lines(
    found: descriptor.FieldDescriptor, comments: dict[str, str], indent: str
) -> Iterable[str]:
    yield from _commented(found.full_name, comments, indent)
    yield f"{indent}{_field_type(found)} {found.name} = {found.number};"


def _field_type(found: descriptor.FieldDescriptor) -> str:
    entry = found.message_type
    if entry is not None and entry.GetOptions().map_entry:
        key, value = entry.fields_by_name["key"], entry.fields_by_name["value"]
        return f"map<{_field_type(key)}, {_field_type(value)}>"
    if entry is not None:
        name = entry.full_name
    elif found.enum_type is not None:
        name = found.enum_type.full_name
    else:
        name = _SCALARS.get(found.type, "bytes")
    if found.is_repeated:
        return f"repeated {name}"
    if found.has_presence and found.containing_oneof is not None and entry is None:
        return f"optional {name}" if _synthetic(found.containing_oneof) else name
    return name


def _enum(found: descriptor.EnumDescriptor, comments: dict[str, str]) -> str:
    lines = [*_commented(found.full_name, comments), f"enum {found.name} {{"]
    for value in found.values:
        lines += _commented(f"{found.full_name}.{value.name}", comments, "  ")
        lines.append(f"  {value.name} = {value.number};")
    return "\n".join([*lines, "}"])


_DESCRIBE: dict[str, Callable[[Any, dict[str, str]], str]] = {
    "service": _service,
    "method": _method,
    "message": _message,
    "enum": _enum,
    "field": _field,
}
