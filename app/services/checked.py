"""Every servicer checks its requests against the field rules before its own code runs.

The field rules (each API's book, see :mod:`app.rules.rule_book`) are the part of the
servicers' validation that the OpenAPI document publishes: applied here, to every request of
every RPC (each message of a client stream too), they are the same rules on both transports and
for every caller, and no servicer method can forget them. What the rules cannot say (a version
the cluster manager supports, a label given twice) stays in the servicers' own validation,
which runs after this.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import grpc
from google.protobuf import descriptor, descriptor_pool
from google.protobuf.message import Message

from app.calls.refusals import Violations
from app.rules.field_checks import FieldChecks
from app.services.status import abort_invalid

F = TypeVar("F", bound=Callable[..., Any])


def checks_own_fields(method: F) -> F:
    """Mark a servicer method whose validation applies the field rules itself, to report their
    violations together with its own (every problem of a request at once)."""
    method.__dict__["checks_own_fields"] = True
    return method


def checked_servicers(servicers: dict[str, object], checks: FieldChecks) -> dict[str, object]:
    """``servicers`` (by full service name), each behind the ``checks`` of its requests."""
    return {name: _Checked(name, servicer, checks) for name, servicer in servicers.items()}


def rule_violations(checks: FieldChecks, request: Message, method: str) -> Violations:
    """The request's violations of the field rules ``checks`` apply to ``method``."""
    found = Violations()
    for path, problem in checks.violations(request, method):
        found.add(path, problem)
    return found


async def _refuse_if_invalid(
    checks: FieldChecks, request: Message, method: str, context: grpc.aio.ServicerContext
) -> None:
    found = rule_violations(checks, request, method)
    if found:
        await abort_invalid(context, found)


class _Checked:
    """A servicer whose RPC methods check their requests first; anything else is the servicer's."""

    def __init__(self, service: str, servicer: object, checks: FieldChecks) -> None:
        self._servicer = servicer
        self._methods: dict[str, Callable[..., Any]] = {}
        try:
            found = descriptor_pool.Default().FindServiceByName(service)
        except KeyError:
            return
        for method in found.methods:
            behaviour = getattr(servicer, method.name, None)
            if behaviour is None or getattr(behaviour, "checks_own_fields", False):
                continue
            if checks.may_apply(method.input_type, method.full_name):
                self._methods[method.name] = _wrap(checks, method, behaviour)

    def __getattr__(self, name: str) -> Any:
        wrapped = self._methods.get(name)
        return wrapped if wrapped is not None else getattr(self._servicer, name)


def _wrap(
    checks: FieldChecks, method: descriptor.MethodDescriptor, behaviour: Callable[..., Any]
) -> Callable[..., Any]:
    name = method.full_name
    if method.client_streaming:
        return _client_stream(checks, name, behaviour)
    if inspect.isasyncgenfunction(behaviour):

        @functools.wraps(behaviour)
        async def stream(request: Message, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            await _refuse_if_invalid(checks, request, name, context)
            async for reply in behaviour(request, context):
                yield reply

        return stream

    @functools.wraps(behaviour)
    async def unary(request: Message, context: grpc.aio.ServicerContext) -> Any:
        await _refuse_if_invalid(checks, request, name, context)
        return await behaviour(request, context)

    return unary


def _client_stream(
    checks: FieldChecks, name: str, behaviour: Callable[..., Any]
) -> Callable[..., Any]:
    def checked(
        requests: AsyncIterator[Message], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Message]:
        async def each() -> AsyncIterator[Message]:
            async for request in requests:
                await _refuse_if_invalid(checks, request, name, context)
                yield request

        return each()

    if inspect.isasyncgenfunction(behaviour):

        @functools.wraps(behaviour)
        async def bidi(requests: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            async for reply in behaviour(checked(requests, context), context):
                yield reply

        return bidi

    @functools.wraps(behaviour)
    async def client(requests: Any, context: grpc.aio.ServicerContext) -> Any:
        return await behaviour(checked(requests, context), context)

    return client
