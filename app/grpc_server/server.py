"""The grpc.aio server: the registry's methods on the same servicer instances, plus reflection
and health.

Handlers are built generically from the registry (no generated ``add_*_to_server`` needed), each
wrapped so that an unexpected exception becomes INTERNAL with a generic message, exactly as on
the REST side, and so that the authenticate hook runs for every call (without one, every call is
refused: see ``app/gateway/admission.py``). Health and reflection pass the same wrapping (the
gate's policy makes them public), and every call is bounded as on the HTTP port (see
:mod:`app.grpc_server.bounds`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from grpc_status import rpc_status

from app.gateway import http_io
from app.gateway.admission import refuse_every_call
from app.gateway.errors import INTERNAL_MESSAGE, BadRequest, GatewayError, method_not_found
from app.gateway.idempotency import Idempotency, keyed
from app.gateway.message_checks import request_violations
from app.gateway.open_streams import SHUTTING_DOWN, OpenStreams, Stream
from app.gateway.options import Authenticate, KnownErrors, no_known_errors
from app.gateway.registry import Method, Registry
from app.grpc_server.bounds import server_options
from app.grpc_server.context import IdentifiedContext
from app.grpc_server.idempotency import run_once
from app.grpc_server.observed import observed, traced_servicer
from app.grpc_server.standard import StandardServices
from app.observe.calls import UNMATCHED, Telemetry
from app.settings import limits

log = logging.getLogger("portico.grpc")


@dataclass(frozen=True)
class _Health:
    standard: StandardServices
    served: tuple[str, ...]  # the services reported SERVING once started


# What start() and stop() need of a server create_server() made, kept beside it (grpc's server
# object has no place for it) for as long as the server lives.
_HEALTH: weakref.WeakKeyDictionary[grpc.aio.Server, _Health] = weakref.WeakKeyDictionary()


def create_server(
    address: str,
    registry: Registry,
    servicers: Mapping[str, object],
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    authenticate: Authenticate = refuse_every_call,
    *,
    shared_port: bool = False,
    credentials: grpc.ServerCredentials | None = None,
    strict: bool = True,
    streams: OpenStreams | None = None,
    telemetry: Telemetry | None = None,
    idempotency: Idempotency | None = None,
    standard: StandardServices | None = None,
    known_errors: KnownErrors = no_known_errors,
    body_timeout: float = limits.DEFAULT_BODY_TIMEOUT_SECONDS,
    header_timeout: float = limits.DEFAULT_HEADER_TIMEOUT_SECONDS,
) -> tuple[grpc.aio.Server, int]:
    """A server bound to ``address`` (port 0 picks a free one) serving every registered method
    that has a servicer; returns it unstarted with the bound port.

    ``shared_port`` lets other processes bind the same port (the workers of one server);
    ``credentials`` serve TLS instead of plaintext. RuntimeError if the port cannot be bound.
    ``strict`` refuses enum numbers an enum does not define (``PORTICO_UNKNOWN_FIELDS=reject``);
    streaming calls register in ``streams``, which ends them with UNAVAILABLE on shutdown;
    ``idempotency`` runs calls that carry an idempotency key at most once; ``standard`` are the
    health and reflection services to serve (shared with the HTTP port's, where it serves them);
    ``known_errors`` says what a servicer's or a hook's exception stands for, as on the HTTP side.
    A request message must arrive within ``body_timeout`` seconds; a connection's handshake
    within ``header_timeout``, which is also how long an idle connection stays open.
    """
    if standard is None:
        standard = StandardServices(service.full_name for service in registry.services)
    admission = _Admission(
        authenticate,
        strict,
        OpenStreams() if streams is None else streams,
        idempotency,
        known_errors,
        body_timeout,
        frozenset(standard.servicers),
    )
    server = grpc.aio.server(
        interceptors=tuple(interceptors),
        options=[("grpc.so_reuseport", int(shared_port)), *server_options(header_timeout)],
    )
    every = {**servicers, **standard.servicers}
    served: list[str] = []
    for service in (registry + standard.registry).services:
        servicer = every.get(service.full_name)
        # A service without a servicer is still registered, so its callers meet the same
        # authentication as everywhere and then a clear UNIMPLEMENTED, as over REST.
        handlers = {
            method.name: _method_handler(
                method,
                _not_served(method) if servicer is None else getattr(servicer, method.name),
                admission,
                telemetry or Telemetry(),
            )
            for method in service.methods
        }
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(service.full_name, handlers),)
        )
        if servicer is not None and service.full_name in servicers:
            served.append(service.full_name)
    # Last: what no handler above serves is answered (and counted) here, as REST counts paths
    # no binding matches, instead of by grpc's own UNIMPLEMENTED, which no metric sees.
    server.add_generic_rpc_handlers((_Unmatched(telemetry or Telemetry()),))
    if credentials is None:
        port = server.add_insecure_port(address)
    else:
        port = server.add_secure_port(address, credentials)
    _HEALTH[server] = _Health(standard, tuple(served))
    return server, port


async def start(server: grpc.aio.Server) -> None:
    """Start serving and report every service (and the server as a whole) SERVING."""
    await server.start()
    state = _HEALTH[server]
    await state.standard.serving(state.served)


async def stop(server: grpc.aio.Server, grace: float = 5.0) -> None:
    """Report NOT_SERVING, then let in-flight calls finish for up to ``grace`` seconds."""
    await _HEALTH[server].standard.stopping()
    await server.stop(grace)


class _Unmatched(grpc.GenericRpcHandler):
    """Every method no other handler serves: UNIMPLEMENTED, counted under ``rpc="unmatched"``."""

    def __init__(self, telemetry: Telemetry) -> None:
        self._rpc = telemetry.rpc("grpc", UNMATCHED)

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method = handler_call_details.method
        rpc = self._rpc

        async def refuse(requests: Any, context: grpc.aio.ServicerContext) -> None:
            # A stream handler, whatever the caller's kind: nothing of the call is read.
            observation = rpc.begin()
            observation.end(grpc.StatusCode.UNIMPLEMENTED.name)
            # With its request id and status details, as every other answer.
            await IdentifiedContext(context).abort_with_status(
                rpc_status.to_status(method_not_found(method).status())
            )

        return grpc.stream_stream_rpc_method_handler(refuse)


class _Admission:
    """What every call passes before its servicer: the authenticate hook, then (for a single
    request) parsing and the checks every request message passes on either transport (see
    :mod:`app.gateway.message_checks`); and, around a streaming call, its registration."""

    def __init__(
        self,
        authenticate: Authenticate,
        strict: bool,
        streams: OpenStreams,
        idempotency: Idempotency | None = None,
        known_errors: KnownErrors = no_known_errors,
        body_timeout: float = limits.DEFAULT_BODY_TIMEOUT_SECONDS,
        own_services: frozenset[str] = frozenset(),
    ) -> None:
        self.authenticate = authenticate
        self.body_timeout = body_timeout  # for a call's one request message
        # gRPC's own services (health, reflection) keep grpc's course at shutdown: a health
        # watch says NOT_SERVING when the shutdown begins and ends with the server, instead of
        # being ended at once with the API's streams.
        self.own_services = own_services
        self.strict = strict
        self.streams = streams
        self.idempotency = idempotency
        self.known_errors = known_errors

    async def __call__(self, method: Method, request: Any, context: IdentifiedContext) -> Any:
        """The request for the servicer; raises GatewayError to refuse the call."""
        await self.authenticate(method, tuple(context.invocation_metadata() or ()), context.peer)
        if method.client_streaming:
            return request  # parsed and checked message by message as the servicer reads
        data = await http_io.only_message(request, self.body_timeout)
        return _checked(_parse(method, data), self.strict)

    def open(self, method: Method, context: IdentifiedContext) -> Any:
        """Around a call: a stream is registered, and ended with UNAVAILABLE on shutdown."""
        if method.kind == "unary":
            return contextlib.nullcontext()
        if method.service in self.own_services:
            task = asyncio.current_task()
            assert task is not None
            return contextlib.nullcontext(Stream(task, 0.0))  # one the shutdown does not end
        return _open_stream(self.streams, context)


def _method_handler(
    method: Method,
    behaviour: Callable[..., Any],
    admit: _Admission,
    telemetry: Telemetry,
) -> grpc.RpcMethodHandler:
    # Every kind reads its requests as a stream: a call of one request gets it from
    # http_io.only_message, under the body timeout (grpc's unary handlers would wait for ever).
    factory = (
        grpc.stream_stream_rpc_method_handler
        if method.server_streaming
        else grpc.stream_unary_rpc_method_handler
    )
    behaviour = traced_servicer(method.full_name, behaviour)
    if method.server_streaming:
        wrapped: Callable[..., Any] = _guard_stream(method, behaviour, admit)
    else:
        wrapped = _guard_unary(method, behaviour, admit)
    # Outermost: the call is observed whatever ends it, the gate's refusal included.
    wrapped = observed(telemetry, method.full_name, method.server_streaming, wrapped)
    # grpc answers a request its deserializer cannot read with UNKNOWN and a logged traceback,
    # before any handler of ours runs. A single request therefore arrives as bytes and is parsed
    # in the guard (after authentication and its read); streamed requests raise
    # MalformedRequest, which travels through the servicer's read to the guard.
    return factory(
        wrapped,
        request_deserializer=(
            _stream_parser(method, admit.strict) if method.client_streaming else None
        ),
        response_serializer=method.output_type.SerializeToString,
    )


class MalformedRequest(BadRequest):
    """Request bytes that are not a serialized message of the method's input type."""

    def __init__(self, method: Method, error: DecodeError) -> None:
        super().__init__(
            f"the request is not a valid serialized {method.input_type.DESCRIPTOR.full_name}"
        )
        self.reason = str(error)[:200]


def _parse(method: Method, data: bytes) -> Any:
    try:
        return method.input_type.FromString(data)
    except DecodeError as exc:
        raise MalformedRequest(method, exc) from None


def _checked(message: Any, strict: bool) -> Any:
    found = request_violations(message, strict)
    if found:
        raise BadRequest(limits.summary(found), found)
    return message


def _stream_parser(method: Method, strict: bool) -> Callable[[bytes], Any]:
    # Each message of a client stream passes the checks a single request passes; a refusal
    # travels through the servicer's read to the guard, as a malformed message does.
    def parse(data: bytes) -> Any:
        return _checked(_parse(method, data), strict)

    return parse


def _not_served(method: Method) -> Callable[..., Any]:
    error = GatewayError(grpc.StatusCode.UNIMPLEMENTED, f"{method.full_name} is not served")

    async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        raise error

    async def stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
        raise error
        yield  # pragma: no cover - makes this an async generator like a streaming servicer

    return stream if method.server_streaming else unary


def _guard_unary(
    method: Method, behaviour: Callable[..., Any], admit: _Admission
) -> Callable[..., Any]:
    async def guarded(request: Any, grpc_context: grpc.aio.ServicerContext) -> Any:
        context = IdentifiedContext(grpc_context)
        try:
            async with admit.open(method, context):
                message = await admit(method, request, context)
                once = admit.idempotency
                key = None if once is None else keyed(method, context.invocation_metadata())
                if once is None or key is None:
                    reply = await behaviour(message, context)
                else:
                    reply = await run_once(once, method, key, message, behaviour, context)
                await context.send_request_id()
                return reply
        except Exception as exc:
            await _fail(method, context, exc, admit.known_errors)

    return guarded


def _guard_stream(
    method: Method, behaviour: Callable[..., Any], admit: _Admission
) -> Callable[..., Any]:
    if not inspect.isasyncgenfunction(behaviour):
        # A handler that sends with context.write() and returns: grpc.aio awaits those, and only
        # a coroutine around it (not a generator) may write.
        return _guard_unary(method, behaviour, admit)

    async def guarded(request: Any, grpc_context: grpc.aio.ServicerContext) -> Any:
        context = IdentifiedContext(grpc_context)
        try:
            async with (
                admit.open(method, context) as stream,
                # Closed here, also when the stream ends while the servicer waits at a yield:
                # its clean-up then runs now, before a shutdown closes the store under it.
                contextlib.aclosing(
                    behaviour(await admit(method, request, context), context)
                ) as replies,
            ):
                while True:
                    try:
                        reply = await anext(replies)
                    except StopAsyncIteration:
                        break
                    await context.send_request_id()
                    # grpc.aio sends the reply while this generator waits at the yield, and
                    # takes a cancellation there for the client's: the shutdown waits outside.
                    stream.outside = True
                    yield reply
                    stream.outside = False
                    if stream.ending:
                        raise asyncio.CancelledError(SHUTTING_DOWN)
                await context.send_request_id()
        except Exception as exc:
            await _fail(method, context, exc, admit.known_errors)

    return guarded


@contextlib.asynccontextmanager
async def _open_stream(streams: OpenStreams, context: IdentifiedContext) -> AsyncIterator[Stream]:
    stream = streams.enter()
    try:
        yield stream
    except (Exception, asyncio.CancelledError):
        if not streams.ended_by_shutdown():
            raise  # the client cancelled, or the servicer failed on its own
        await context.abort(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
    finally:
        streams.leave(stream)


async def _fail(
    method: Method, context: IdentifiedContext, exc: Exception, known_errors: KnownErrors
) -> None:
    """Re-raise aborts; answer a known exception with its status (the store's UNAVAILABLE), and
    anything else with INTERNAL, without leaking its text."""
    if isinstance(exc, grpc.aio.AbortError):
        raise exc
    await context.send_request_id()
    if isinstance(exc, MalformedRequest):
        # One line, no traceback: a flood of bad requests must not become a flood of log.
        log.warning(
            "malformed request to %s from %s (%s; request id %s)",
            method.full_name,
            context.peer(),
            exc.reason,
            context.request_id,
        )
    if isinstance(exc, GatewayError):  # e.g. the authenticate hook refusing
        await context.abort_with_status(rpc_status.to_status(exc.status()))
    code = context.code()
    if code not in (None, grpc.StatusCode.OK):
        raise exc  # a status set before raising is what the client sees, as in grpc itself
    known = known_errors(exc, context.request_id)
    if known is not None:
        await context.abort_with_status(rpc_status.to_status(known.status()))
    request_id = context.request_id
    log.error("unexpected error in %s (request id %s)", method.full_name, request_id, exc_info=exc)
    await context.abort(grpc.StatusCode.INTERNAL, INTERNAL_MESSAGE)
