"""Calls and who answers them: the seam between a protocol's flow and the code behind an RPC.

A flow (REST, WebSocket, Connect, gRPC-Web, native gRPC) turns a request into a :class:`Call`
and a message, passes the gate (:func:`admit`), and hands both to an :class:`Invoker`.
:class:`ServicerInvoker` here runs the in-process grpc.aio servicers (``portico serve``); the
proxy's invokers (:mod:`app.gateway.upstream`, :mod:`app.gateway.upstream_http2`) call a remote
gRPC server through the same two methods, every flow unchanged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeAlias

import grpc
from google.protobuf.message import Message
from starlette.types import Scope

from app.gateway import http_io
from app.gateway.context import GatewayContext
from app.gateway.errors import GatewayError, internal_error
from app.gateway.open_streams import OpenStreams, shutting_down
from app.gateway.options import Authenticate, GatewayOptions, KnownErrors, no_known_errors
from app.gateway.registry import Method, Registry
from app.observe.calls import Observation

log = logging.getLogger("portico.gateway")

# The ASGI extension through which a server tells a call its client went away, where it can
# (uvicorn's connections in app/server/on_uvicorn do): see :func:`watch_disconnect`.
ON_DISCONNECT = "portico.on_disconnect"

# What a servicer method takes: one message, or a client stream's messages as they arrive.
Request: TypeAlias = Message | AsyncIterator[Message]


class Call:
    """A request on its way to a servicer: everything but the message.

    A plain slotted class: one is built per request, and a frozen dataclass costs several
    times more to construct.
    """

    __slots__ = ("context", "headers", "method", "observation", "request_id")

    def __init__(
        self,
        method: Method,
        request_id: str,
        headers: http_io.Headers,
        context: GatewayContext,
        observation: Observation,
    ) -> None:
        self.method = method
        self.request_id = request_id
        self.headers = headers
        self.context = context
        self.observation = observation  # what the flow records of the call (metrics, span)


def new_call(
    method: Method,
    headers: http_io.Headers,
    request_id: str,
    scope: Scope,
    observation: Observation,
) -> Call:
    """The call for a request: its metadata and deadline come from the headers."""
    metadata, deadline = http_io.metadata(headers, request_id)
    context = GatewayContext(metadata, scope.get("client"), deadline)
    return Call(method, request_id, headers, context, observation)


def admit(call: Call, authenticate: Authenticate) -> Awaitable[object]:
    """The gate: the authenticate hook refuses (raising GatewayError) or lets the call on.

    The hook's own awaitable, not a coroutine around it: every call passes here, and each
    layer of coroutine on that path is measurable (``tests/bench``)."""
    context = call.context
    return authenticate(call.method, context.invocation_metadata(), context.peer)


class Invoker(Protocol):
    """Who answers a call. Every ending is raised as a :class:`GatewayError`."""

    def unary(self, call: Call, request: Request) -> Awaitable[Message]:
        """The one reply of a call whose reply is not streamed (``request`` may be a stream)."""
        ...

    def stream(self, call: Call, request: Request) -> AsyncGenerator[Message, None]:
        """The replies of a server-streaming call; the flow iterates them under the deadline,
        reads a status set at the end from ``call.context``, and closes them however it ends
        (:func:`contextlib.aclosing`): a servicer's ``finally`` runs when its call ends, not
        whenever the garbage collector finds the generator a cancelled flow left behind."""
        ...


class ServicerInvoker:
    """Runs the in-process grpc.aio servicers, as the gRPC server would; what a servicer raises
    is answered as ``known_errors`` says (INTERNAL when it does not know it)."""

    def __init__(
        self,
        registry: Registry,
        servicers: Mapping[str, object],
        known_errors: KnownErrors = no_known_errors,
    ) -> None:
        self._known_errors = known_errors
        # Bound servicer methods, looked up once; a missing servicer answers UNIMPLEMENTED.
        self._handlers: dict[str, Callable[..., Any] | None] = {
            m.grpc_path: getattr(servicers.get(m.service), m.name, None) for m in registry
        }

    async def unary(self, call: Call, request: Request) -> Message:
        """Run the servicer under the deadline, and turn every ending into a reply."""
        context = call.context
        handler = self._handler(call.method)
        try:
            with call.observation.servicer_span():
                if context.deadline is None:
                    reply = await handler(request, context)
                else:
                    async with asyncio.timeout_at(loop_time(context.deadline)):
                        reply = await handler(request, context)
        except GatewayError:
            raise
        except TimeoutError as exc:
            if context.time_remaining() == 0:
                context.cancel()
                raise GatewayError(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded") from exc
            raise unexpected_failure(call, exc, self._known_errors) from exc
        except Exception as exc:
            raise unexpected_failure(call, exc, self._known_errors) from exc
        finally:
            context.finish()
        error = context.status_error()
        if error is not None:
            raise error
        if not isinstance(reply, call.method.output_type):
            log.error(
                "%s returned %r (request id %s)",
                call.method.full_name,
                type(reply),
                call.request_id,
            )
            raise internal_error()
        return reply

    def stream(self, call: Call, request: Request) -> AsyncGenerator[Message, None]:
        handler = self._handler(call.method)
        return call.observation.replies(call.context.replies(handler(request, call.context)))

    def _handler(self, method: Method) -> Callable[..., Any]:
        handler = self._handlers[method.grpc_path]
        if handler is None:
            raise GatewayError(grpc.StatusCode.UNIMPLEMENTED, f"{method.full_name} is not served")
        return handler


def unary_reply(
    invoker: Invoker, call: Call, request: Request, scope: Scope, watch: bool
) -> Awaitable[Message]:
    """``invoker.unary``; with ``watch``, a client that goes away meanwhile cancels the call's
    context (the upstream's call with it) and the flow hears CANCELLED. That only matters when
    the work goes on elsewhere (a proxy's upstream): an in-process servicer finishes its call.
    The connection tells (:data:`ON_DISCONNECT`); where it cannot, as under a test's
    in-memory transport, whose client never goes away, there is nothing to watch."""
    extension = scope.get("extensions", {}).get(ON_DISCONNECT) if watch else None
    on_disconnect = None if extension is None else extension.get("watch")
    if on_disconnect is None:
        return invoker.unary(call, request)
    return _watched_reply(invoker, call, request, on_disconnect)


async def _watched_reply(
    invoker: Invoker,
    call: Call,
    request: Request,
    on_disconnect: Callable[[Callable[[], object]], Callable[[], None]],
) -> Message:
    gone = False

    def went_away() -> None:
        nonlocal gone
        gone = True
        call.context.cancel()

    forget = on_disconnect(went_away)
    try:
        return await invoker.unary(call, request)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if not gone or (task is not None and task.cancelling()):
            raise  # this flow itself is being cancelled: not ours to answer
        # The upstream's call ended cancelled because its client went away.
        raise GatewayError(grpc.StatusCode.CANCELLED, "the client went away") from None
    finally:
        forget()


def unexpected_failure(
    call: Call, exc: Exception, known_errors: KnownErrors = no_known_errors
) -> GatewayError:
    """What a call answers when it ends in an exception no flow expected: the status it stands
    for if ``known_errors`` knows it (the store's UNAVAILABLE), else INTERNAL, logged."""
    context = call.context
    # A status set before raising (as generated base servicers do) is what grpc reports too.
    error = context.status_error() or known_errors(exc, call.request_id)
    if error is not None:
        return error
    log.error(
        "unexpected error in %s (request id %s)",
        call.method.full_name,
        call.request_id,
        exc_info=exc,
    )
    return internal_error()


def grace_ended(
    streams: OpenStreams, context: GatewayContext | None, cancelled: asyncio.CancelledError
) -> GatewayError:
    """What a call that is not a stream answers when ``cancelled`` is the shutdown's, at the end
    of the grace for calls in flight: UNAVAILABLE, as a refusal (its work abandoned, as a client
    going away abandons it). Any other cancellation is raised on."""
    if not streams.call_ended_by_shutdown():
        raise cancelled
    if context is not None:
        context.cancel()
    return shutting_down()


def stream_failure(call: Call, options: GatewayOptions, exc: BaseException) -> GatewayError:
    """What a stream ends with when ``exc`` ended it: UNAVAILABLE if the shutdown did (whatever
    the servicer made of its cancellation), else the unexpected failure. A cancellation that is
    not the shutdown's (the client went away) is raised on."""
    if options.streams.ended_by_shutdown():
        call.context.cancel()
        return shutting_down()
    if not isinstance(exc, Exception):
        raise exc
    return unexpected_failure(call, exc, options.known_errors)


def stream_ending(call: Call, options: GatewayOptions, exc: BaseException) -> GatewayError:
    """The status a streaming flow ends with when ``exc`` left its loop of replies: a refusal
    as it is, the call's deadline as DEADLINE_EXCEEDED, anything else as :func:`stream_failure`."""
    if isinstance(exc, GatewayError):
        return exc
    if isinstance(exc, TimeoutError):
        call.context.cancel()
        return GatewayError(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded")
    return stream_failure(call, options, exc)


def until_deadline(context: GatewayContext) -> asyncio.Timeout:
    """A stream's deadline as an asyncio timeout (one that never fires without a deadline)."""
    deadline = context.deadline
    return asyncio.timeout_at(None if deadline is None else loop_time(deadline))


def loop_time(deadline: float) -> float:
    # Deadlines are time.monotonic() values; the loop clock may differ.
    return asyncio.get_running_loop().time() + (deadline - time.monotonic())
