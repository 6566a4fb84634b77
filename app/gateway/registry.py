"""The services and methods Portico serves, read from protobuf descriptors (never hand-listed).

Everything transport-shaped (REST routes, the gRPC server, OpenAPI, the auth policy, the docs'
RPC table) is derived from a :class:`Registry`, so adding an RPC to a .proto and regenerating is
all it takes to serve it.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from google.api import annotations_pb2, http_pb2
from google.protobuf import descriptor, descriptor_pb2, message, message_factory

_RULE_VERBS = ("get", "put", "post", "delete", "patch")


@dataclass(frozen=True)
class HttpBinding:
    """One ``google.api.http`` rule: an HTTP verb, a path template and where the body goes."""

    verb: str  # upper case: GET, POST, ... or the custom verb's kind
    path: str
    body: str = ""
    response_body: str = ""


@dataclass(frozen=True)
class Method:
    """One RPC and everything a transport needs to know about it."""

    service: str
    name: str
    descriptor: descriptor.MethodDescriptor
    client_streaming: bool
    server_streaming: bool
    http: tuple[HttpBinding, ...]

    # Cached: transports read these on every call.
    @cached_property
    def full_name(self) -> str:
        """``package.Service.Method``."""
        return f"{self.service}.{self.name}"

    @cached_property
    def grpc_path(self) -> str:
        """The HTTP/2 path gRPC uses: ``/package.Service/Method``."""
        return f"/{self.service}/{self.name}"

    @cached_property
    def kind(self) -> str:
        """``unary``, ``server_streaming``, ``client_streaming`` or ``bidi_streaming``."""
        if self.client_streaming and self.server_streaming:
            return "bidi_streaming"
        if self.client_streaming:
            return "client_streaming"
        if self.server_streaming:
            return "server_streaming"
        return "unary"

    @cached_property
    def side_effect_free(self) -> bool:
        """Marked ``option idempotency_level = NO_SIDE_EFFECTS`` in its proto."""
        level = self.descriptor.GetOptions().idempotency_level
        return bool(level == descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS)

    @cached_property
    def input_type(self) -> type[message.Message]:
        """The request message class."""
        return message_factory.GetMessageClass(self.descriptor.input_type)

    @cached_property
    def output_type(self) -> type[message.Message]:
        """The response message class."""
        return message_factory.GetMessageClass(self.descriptor.output_type)


@dataclass(frozen=True)
class Service:
    """One gRPC service with its methods in declaration order."""

    full_name: str
    descriptor: descriptor.ServiceDescriptor
    methods: tuple[Method, ...]


class Registry:
    """All services of a set of proto files, in the order the files and services declare them.

    The files may come from any descriptor pool: the generated modules' (``from_package``) or
    one built from a remote server's reflection, which ``only`` then narrows to the services
    that server lists.
    """

    def __init__(
        self,
        files: Iterable[descriptor.FileDescriptor],
        only: Collection[str] | None = None,
    ) -> None:
        self.files = tuple(files)
        services: dict[str, Service] = {}
        for file in self.files:
            for service_desc in file.services_by_name.values():
                if only is not None and service_desc.full_name not in only:
                    continue
                if service_desc.full_name not in services:
                    services[service_desc.full_name] = _service(service_desc)
        self.services: tuple[Service, ...] = tuple(services.values())
        self.methods_by_path: dict[str, Method] = {
            m.grpc_path: m for s in self.services for m in s.methods
        }

    def __add__(self, other: Registry) -> Registry:
        """Both registries' services, this one's first."""
        names = {service.full_name for service in (*self.services, *other.services)}
        return Registry((*self.files, *other.files), only=names)

    def __iter__(self) -> Iterator[Method]:
        for service in self.services:
            yield from service.methods

    def __len__(self) -> int:
        return len(self.methods_by_path)

    def method(self, grpc_path: str) -> Method:
        """The method served at ``/package.Service/Method``; KeyError when there is none."""
        return self.methods_by_path[grpc_path]

    def bind(self, servicers: Iterable[object]) -> dict[str, object]:
        """Every service's servicer, by the service's full name: each servicer is bound to the
        service of the generated ``<Service>Servicer`` class it derives from. A servicer of no
        service here, a second one of a service, or a service left without one is a
        ValueError naming it (a start that would answer UNIMPLEMENTED where it meant to serve).
        """
        bound: dict[str, object] = {}
        names = {service.full_name for service in self.services}
        for servicer in servicers:
            name = implemented_service(servicer)
            if name not in names:
                raise ValueError(f"{type(servicer).__name__} implements {name}, not served here")
            if name in bound:
                raise ValueError(f"{name} has two servicers: {type(servicer).__name__} is one")
            bound[name] = servicer
        missing = sorted(names - bound.keys())
        if missing:
            raise ValueError(f"no servicer for {', '.join(missing)}")
        return bound

    @classmethod
    def from_package(cls, package: str = "gen") -> Registry:
        """Import every ``*_pb2`` module below ``package``; a registry of their services."""
        # Generated folders are namespace packages below ``package``; pkgutil does not walk
        # namespace packages, so glob.
        root = Path(importlib.import_module(package).__file__ or "").parent
        files = []
        for path in sorted(root.rglob("*_pb2.py")):
            name = ".".join((package, *path.relative_to(root).with_suffix("").parts))
            files.append(importlib.import_module(name).DESCRIPTOR)
        return cls(files)


def implemented_service(servicer: object) -> str:
    """The full name of the service ``servicer`` implements: that of the generated
    ``<Service>Servicer`` class (in a ``*_pb2_grpc`` module) it derives from."""
    for cls in type(servicer).__mro__:
        module, name = cls.__module__, cls.__name__
        if module.endswith("_pb2_grpc") and name.endswith("Servicer"):
            messages = importlib.import_module(module.removesuffix("_grpc"))
            found = messages.DESCRIPTOR.services_by_name.get(name.removesuffix("Servicer"))
            if found is not None:
                return str(found.full_name)
    raise ValueError(f"{type(servicer).__name__} derives from no generated servicer class")


def _service(service_desc: descriptor.ServiceDescriptor) -> Service:
    methods = tuple(
        Method(
            service=service_desc.full_name,
            name=m.name,
            descriptor=m,
            client_streaming=m.client_streaming,
            server_streaming=m.server_streaming,
            http=tuple(http_bindings(m)),
        )
        for m in service_desc.methods
    )
    return Service(service_desc.full_name, service_desc, methods)


def http_bindings(method_desc: descriptor.MethodDescriptor) -> Iterator[HttpBinding]:
    """The method's ``google.api.http`` rule and its ``additional_bindings``, in order."""
    # Found among the set fields rather than through Extensions[...]: protoc's stubs type the
    # extension as a plain FieldDescriptor, which the Extensions API does not accept.
    for field, rule in method_desc.GetOptions().ListFields():
        if field.full_name == annotations_pb2.http.full_name:
            yield from _bindings(rule)


def _bindings(rule: http_pb2.HttpRule) -> Iterator[HttpBinding]:
    pattern = rule.WhichOneof("pattern")
    if pattern in _RULE_VERBS:
        yield HttpBinding(pattern.upper(), getattr(rule, pattern), rule.body, rule.response_body)
    elif pattern == "custom":
        yield HttpBinding(rule.custom.kind.upper(), rule.custom.path, rule.body, rule.response_body)
    for extra in rule.additional_bindings:
        yield from _bindings(extra)
