"""The second :class:`~app.gateway.invoker.Invoker`: calls answered by a remote gRPC server.

Each method becomes a generic call on a ``grpc.aio`` channel, from its full name and its
message classes' serializers; nothing per RPC is written. What the flows gave the in-process
servicers travels as gRPC does it: metadata (request id, trace context, ``grpc-metadata-*``,
the caller's ``authorization`` only when told to pass it on, and the identity the gate admitted
as ``x-portico-*`` metadata when told to: a caller's own ``x-portico-*`` never passes), the
deadline as the call's
timeout, and cancellation when the client goes away. The upstream's status, message and
``google.rpc.Status`` details come back as a :class:`GatewayError`, its metadata as the reply's.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message
from google.rpc import status_pb2

from app.gateway.context import GatewayContext, Metadata
from app.gateway.errors import CODE_BY_NUMBER, STATUS_DETAILS_KEY, BadRequest, GatewayError
from app.gateway.invoker import Call, Invoker, Request
from app.gateway.registry import Method

# What gRPC allows as metadata: lower-case names, printable ASCII values (unless -bin).
_KEY = re.compile(r"^[0-9a-z_.-]+$")
_TEXT = re.compile(r"^[\x20-\x7e]*$")
# HTTP/2 and gRPC's own headers: a caller may not set them on the upstream call.
_RESERVED = frozenset({"content-type", "te", "host", "connection", "user-agent"})
# Said by the HTTP side only: the proxy's own peer and forwarding are not the upstream's business;
# a native gRPC caller's user-agent names its library, and the upstream call has its own.
_NOT_FORWARDED = frozenset({"x-forwarded-for", "forwarded", "user-agent"})
_TRACE_HEADERS = (b"traceparent", b"tracestate")
# Who the caller is, as the proxy tells the upstream (PORTICO_PROXY_FORWARD_IDENTITY=metadata):
# never taken from the caller, who could otherwise claim to be anyone.
IDENTITY_KEYS = frozenset({"x-portico-subject", "x-portico-roles", "x-portico-issuer"})


@dataclass(frozen=True)
class Forwarding:
    """What an upstream call carries of its caller besides the call's own metadata."""

    # The caller's own Authorization header.
    authorization: bool = False
    # Metadata naming the caller the gate admitted (keys of IDENTITY_KEYS), asked per call.
    identity: Callable[[], Iterable[tuple[str, str | bytes]]] | None = None


class UpstreamInvoker:
    """Answers each method on the channel of the upstream that serves its service."""

    def __init__(
        self,
        methods: Iterable[Method],
        channels: Mapping[str, grpc.aio.Channel],
        *,
        forwarding: Forwarding,
    ) -> None:
        self._calls: dict[str, Callable[..., Any]] = {
            m.grpc_path: _multicallable(channels[m.service], m) for m in methods
        }
        self._forwarding = forwarding

    async def unary(self, call: Call, request: Request) -> Message:
        context = call.context
        grpc_call, feeder = self._start(call, request)
        try:
            with call.observation.servicer_span():
                reply = await grpc_call
            context.initial_metadata = _pairs(await grpc_call.initial_metadata())
            context.trailing_metadata_sent = _pairs(await grpc_call.trailing_metadata())
        except (grpc.aio.AioRpcError, asyncio.CancelledError) as exc:
            raise _failure(exc, feeder, context) from None
        finally:
            _stop(feeder)
            context.finish()
        assert isinstance(reply, Message)
        return reply

    def stream(self, call: Call, request: Request) -> AsyncGenerator[Message, None]:
        return call.observation.replies(self._replies(call, request))

    async def _replies(self, call: Call, request: Request) -> AsyncGenerator[Message, None]:
        context = call.context
        grpc_call, feeder = self._start(call, request)
        try:
            first = True
            async for reply in grpc_call:
                if first:  # the headers go out with the first reply: the upstream's come with it
                    context.initial_metadata = _pairs(await grpc_call.initial_metadata())
                    first = False
                yield reply
            context.trailing_metadata_sent = _pairs(await grpc_call.trailing_metadata())
        except (grpc.aio.AioRpcError, asyncio.CancelledError) as exc:
            raise _failure(exc, feeder, context) from None
        finally:
            _stop(feeder)
            grpc_call.cancel()  # a no-op once it ended; the upstream's work stops otherwise

    def _start(self, call: Call, request: Request) -> tuple[Any, asyncio.Task[None] | None]:
        """The upstream call, and the task that writes a client stream's requests into it."""
        method = call.method
        multicallable = self._calls.get(method.grpc_path)
        if multicallable is None:
            raise GatewayError(grpc.StatusCode.UNIMPLEMENTED, f"{method.full_name} is not served")
        context = call.context
        metadata, timeout = self._metadata(call), context.time_remaining()
        feeder = None
        if isinstance(request, Message):
            grpc_call = multicallable(request, metadata=metadata, timeout=timeout)
        else:
            # Written by a task of ours, not handed to grpc as an iterator: grpc would swallow
            # the client's bad input (a BadRequest) and only cancel the call.
            grpc_call = multicallable(metadata=metadata, timeout=timeout)
            feeder = asyncio.ensure_future(_feed(grpc_call, request))
        # The client went away or the flow gave up: the upstream hears of it at once.
        context.add_done_callback(lambda _: grpc_call.cancel())
        return grpc_call, feeder

    def _metadata(self, call: Call) -> Metadata:
        return forwarded_metadata(call, self._forwarding)


def forwarded_metadata(call: Call, forwarding: Forwarding) -> Metadata:
    """The call's metadata as the upstream call carries it (see the module's docstring)."""
    found: list[tuple[str, str | bytes]] = []
    for key, value in call.context.invocation_metadata():
        if (
            key in _NOT_FORWARDED
            or key in IDENTITY_KEYS
            or (key == "authorization" and not forwarding.authorization)
        ):
            continue
        _check(key, value)
        found.append((key, value))
    if forwarding.identity is not None:
        found.extend(forwarding.identity())
    for name in _TRACE_HEADERS:
        header = call.headers.get(name)
        if header is not None:
            text = header.decode("latin-1")
            _check(name.decode(), text)
            found.append((name.decode(), text))
    return tuple(found)


class ByService:
    """Sends each call to the invoker of its service: in-process servicers beside an upstream
    (the proxy's own login beside the services it fronts)."""

    def __init__(self, invokers: Mapping[str, Invoker]) -> None:
        self._invokers = dict(invokers)

    def _for(self, call: Call) -> Invoker:
        invoker = self._invokers.get(call.method.service)
        if invoker is None:
            raise GatewayError(
                grpc.StatusCode.UNIMPLEMENTED, f"{call.method.full_name} is not served"
            )
        return invoker

    async def unary(self, call: Call, request: Request) -> Message:
        return await self._for(call).unary(call, request)

    def stream(self, call: Call, request: Request) -> AsyncGenerator[Message, None]:
        return self._for(call).stream(call, request)


def upstream_error(exc: grpc.aio.AioRpcError, context: GatewayContext) -> GatewayError:
    """The upstream's status as the gateway renders it: code, message and rich details."""
    return status_error(exc.code(), exc.details() or "", _pairs(exc.trailing_metadata()), context)


def status_error(
    code: grpc.StatusCode, message: str, trailing: Metadata, context: GatewayContext
) -> GatewayError:
    """An upstream's status and trailers as the gateway renders them: the trailers are the
    reply's; a ``google.rpc.Status`` among them with the same code gives the details."""
    context.trailing_metadata_sent = trailing
    for key, value in trailing:
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            try:
                status = status_pb2.Status.FromString(value)
            except Exception:  # a malformed trailer: the plain status still holds
                break
            if CODE_BY_NUMBER.get(status.code) is code:
                return GatewayError.from_status(status)
    return GatewayError(code, message)


def _multicallable(channel: grpc.aio.Channel, method: Method) -> Callable[..., Any]:
    kinds: dict[str, Callable[..., Callable[..., Any]]] = {
        "unary": channel.unary_unary,
        "server_streaming": channel.unary_stream,
        "client_streaming": channel.stream_unary,
        "bidi_streaming": channel.stream_stream,
    }
    return kinds[method.kind](
        method.grpc_path,
        request_serializer=method.input_type.SerializeToString,
        response_deserializer=method.output_type.FromString,
    )


def _pairs(metadata: Any) -> Metadata:
    return tuple((key, value) for key, value in metadata or ())


def _check(key: str, value: str | bytes) -> None:
    """Refuse, naming it, a header gRPC cannot carry (it would fail the call less clearly)."""
    if key.startswith("grpc-") or key in _RESERVED or not _KEY.match(key):
        raise BadRequest(f"header {key} cannot travel as gRPC metadata", [(key, "bad name")])
    if isinstance(value, str) and not _TEXT.match(value):
        raise BadRequest(
            f"header {key} cannot travel as gRPC metadata: not printable ASCII",
            [(key, "not printable ASCII")],
        )


async def _feed(grpc_call: Any, requests: AsyncIterator[Message]) -> None:
    """Write the client stream's requests into the upstream call, then half-close it."""
    try:
        async for message in requests:
            await grpc_call.write(message)
        await grpc_call.done_writing()
    except grpc.aio.AioRpcError:
        return  # the call has ended: its status is what the caller hears
    except BaseException:
        grpc_call.cancel()  # bad input (or our own end): the upstream call stops too
        raise


def _failure(
    exc: BaseException, feeder: asyncio.Task[None] | None, context: GatewayContext
) -> BaseException:
    """What a call that ended in ``exc`` raises: the client stream's bad input if that ended
    it, the upstream's status, or the cancellation as it is."""
    if feeder is not None and feeder.done() and not feeder.cancelled():
        failed = feeder.exception()
        if isinstance(failed, Exception):  # a BadRequest, mostly
            return failed
    if isinstance(exc, grpc.aio.AioRpcError):
        return upstream_error(exc, context)
    return exc


def _stop(feeder: asyncio.Task[None] | None) -> None:
    if feeder is not None:
        feeder.cancel()
        # Its failure, if any, was read by _failure or does not matter now.
        feeder.add_done_callback(lambda task: task.cancelled() or task.exception())
