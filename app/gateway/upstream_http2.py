"""An :class:`~app.gateway.invoker.Invoker` that makes each gRPC call a plain HTTP/2 request,
through a transport with pyqwest's interface (``execute(Request)`` answering a response whose
trailers follow its body): under pyvoy, Envoy's own client to a cluster per upstream (see
:mod:`app.proxy.envoy_calls`).

It speaks the gRPC wire protocol itself, as grpc.aio would: the path ``/package.Service/Method``,
``application/grpc`` with ``te: trailers``, the deadline as ``grpc-timeout``, each message in a
5-byte frame, and the status from the trailers (or from the headers of a trailers-only reply).
What travels and what comes back is what :class:`~app.gateway.upstream.UpstreamInvoker` sends
and reads: the same metadata (:func:`~app.gateway.upstream.forwarded_metadata`), and the
upstream's status, message and details as a :class:`GatewayError`.
"""

from __future__ import annotations

import asyncio
import binascii
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from urllib.parse import unquote

import grpc
from google.protobuf.message import Message
from pyqwest import Headers, Request, Response, Transport

from app.gateway.codec import base64_text
from app.gateway.codec.envelopes import HEADER_BYTES, declared_length, envelope
from app.gateway.context import GatewayContext, Metadata
from app.gateway.errors import CODE_BY_NUMBER, GatewayError
from app.gateway.invoker import Call, until_deadline
from app.gateway.invoker import Request as CallRequest
from app.gateway.registry import Method
from app.gateway.upstream import Forwarding, forwarded_metadata, status_error

# A reply message larger than this fails the call (grpc's own default receive limit).
MAX_REPLY_BYTES = 4 * 1024 * 1024
# Response headers that are HTTP's or gRPC's own, or the transport's, not the upstream's metadata.
_NOT_METADATA = frozenset(
    {
        "content-type", "content-length", "date", "server", "trailer", "te", "via",
        "grpc-encoding", "grpc-accept-encoding", "grpc-status", "grpc-message",
        "grpc-status-details-bin", "x-envoy-upstream-service-time",
    }
)  # fmt: skip
# An HTTP status instead of a gRPC one (a proxy's or a broken server's reply), as gRPC maps it.
_HTTP_CODES = {
    400: grpc.StatusCode.INTERNAL,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.UNIMPLEMENTED,
    429: grpc.StatusCode.UNAVAILABLE,
    502: grpc.StatusCode.UNAVAILABLE,
    503: grpc.StatusCode.UNAVAILABLE,
    504: grpc.StatusCode.UNAVAILABLE,
}

# The transport for a call, given its deadline's seconds (None: none), and the URL it posts to.
Connect = Callable[[float | None], Transport]


class Http2Invoker:
    """Answers each method with an HTTP/2 request through its service's upstream transport."""

    def __init__(
        self,
        methods: Iterable[Method],
        upstreams: Mapping[str, tuple[Connect, str]],
        *,
        forwarding: Forwarding,
    ) -> None:
        # Per method: its upstream's transport, and the URL its calls post to.
        self._routes = {
            m.grpc_path: (upstreams[m.service][0], upstreams[m.service][1] + m.grpc_path)
            for m in methods
        }
        self._forwarding = forwarding

    async def unary(self, call: Call, request: CallRequest) -> Message:
        context = call.context
        task = asyncio.current_task()
        assert task is not None
        ended = went = False

        def went_away(_: object) -> None:
            # The client is gone: the upstream's request is reset, and the call ends cancelled
            # as a grpc.aio call would (this task itself is not: the flow answers for it).
            nonlocal went
            if not ended and context.cancelled():
                went = True
                task.cancel()

        context.add_done_callback(went_away)
        feeding = _Feeding()
        try:
            with call.observation.servicer_span():
                async with until_deadline(context):
                    response = await self._execute(call, request, feeding)
                    try:
                        replies = [reply async for reply in _replies(call, response)]
                    finally:
                        await response.aclose()
        except asyncio.CancelledError:
            ended = True
            if went:
                task.uncancel()
            raise feeding.failure() or asyncio.CancelledError() from None
        except Exception as exc:
            ended = True
            raise feeding.failure() or _error(exc, context) from None
        finally:
            ended = True
            context.finish()
        if len(replies) != 1:
            raise GatewayError(
                grpc.StatusCode.UNIMPLEMENTED, f"the upstream sent {len(replies)} replies, not 1"
            )
        return replies[0]

    def stream(self, call: Call, request: CallRequest) -> AsyncGenerator[Message, None]:
        return call.observation.replies(self._stream(call, request))

    async def _stream(self, call: Call, request: CallRequest) -> AsyncGenerator[Message, None]:
        feeding = _Feeding()
        response = None
        try:
            response = await self._execute(call, request, feeding)
            async for reply in _replies(call, response):
                yield reply
        except Exception as exc:
            raise feeding.failure() or _error(exc, call.context) from None
        finally:
            if response is not None:
                # A no-op once it ended; the upstream's work stops otherwise.
                with contextlib.suppress(Exception):
                    await response.aclose()

    async def _execute(self, call: Call, request: CallRequest, feeding: _Feeding) -> Response:
        method = call.method
        route = self._routes.get(method.grpc_path)
        if route is None:
            raise GatewayError(grpc.StatusCode.UNIMPLEMENTED, f"{method.full_name} is not served")
        connect, url = route
        timeout = call.context.time_remaining()
        headers = Headers([("content-type", "application/grpc"), ("te", "trailers")])
        if timeout is not None:
            headers["grpc-timeout"] = _grpc_timeout(timeout)
        for key, value in forwarded_metadata(call, self._forwarding):
            if isinstance(value, bytes):
                value = base64_text.encode_unpadded(value)
            headers.add(key, value)
        content: bytes | AsyncIterator[bytes]
        if isinstance(request, Message):
            content = envelope(0, request.SerializeToString())
        else:
            content = feeding.frames(request)
        return await connect(timeout).execute(Request("POST", url, headers, content))


class _Feeding:
    """A client stream's messages as request frames; what ended it, if it was the client's
    bad input (the call then fails with that, not with the reset it caused)."""

    def __init__(self) -> None:
        self.failed: Exception | None = None

    async def frames(self, requests: AsyncIterator[Message]) -> AsyncIterator[bytes]:
        try:
            async for message in requests:
                yield envelope(0, message.SerializeToString())
        except Exception as exc:
            self.failed = exc
            raise

    def failure(self) -> Exception | None:
        return self.failed


async def _replies(call: Call, response: Response) -> AsyncGenerator[Message, None]:
    """The reply messages of ``response``, then its status: an error unless OK."""
    context = call.context
    status = response.status
    headers = response.headers
    if status != 200:
        code = _HTTP_CODES.get(status, grpc.StatusCode.UNKNOWN)
        raise GatewayError(code, f"the upstream answered HTTP {status}")
    if "grpc-status" in headers:  # trailers-only: no message, the status in the headers
        _check_status(headers, context)
        return
    context.initial_metadata = _metadata(headers)
    parse = call.method.output_type.FromString
    buffer = bytearray()
    async for chunk in response.content:
        buffer += chunk
        while len(buffer) >= HEADER_BYTES:
            size = declared_length(buffer)
            if buffer[0] != 0:
                raise GatewayError(grpc.StatusCode.INTERNAL, "the upstream compressed a reply")
            if size > MAX_REPLY_BYTES:
                raise GatewayError(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"the upstream's reply of {size} bytes is larger than {MAX_REPLY_BYTES}",
                )
            if len(buffer) < HEADER_BYTES + size:
                break
            data = bytes(buffer[HEADER_BYTES : HEADER_BYTES + size])
            del buffer[: HEADER_BYTES + size]
            yield parse(data)
    if buffer:
        raise GatewayError(grpc.StatusCode.INTERNAL, "the upstream's reply ended mid-message")
    _check_status(response.trailers, context)


def _check_status(fields: Headers, context: GatewayContext) -> None:
    """Raise the status ``fields`` carry unless it is OK; they are the reply's trailers."""
    trailing = _metadata(fields)
    raw = fields.get("grpc-status")
    if raw is None:
        raise GatewayError(grpc.StatusCode.INTERNAL, "the upstream sent no grpc-status")
    code = CODE_BY_NUMBER.get(int(raw) if raw.isdigit() else -1, grpc.StatusCode.UNKNOWN)
    if code is grpc.StatusCode.OK:
        context.trailing_metadata_sent = trailing
        return
    details = fields.get("grpc-status-details-bin")
    if details is not None:
        trailing += (("grpc-status-details-bin", _unbase64(details)),)
    raise status_error(code, unquote(fields.get("grpc-message") or ""), trailing, context)


def _metadata(fields: Headers) -> Metadata:
    found: list[tuple[str, str | bytes]] = []
    for key, value in fields.items():
        if key in _NOT_METADATA or key.startswith(":"):
            continue
        found.append((key, _unbase64(value) if key.endswith("-bin") else value))
    return tuple(found)


def _unbase64(value: str) -> bytes:
    try:
        return base64_text.decode(value)
    except binascii.Error:
        return b""  # a malformed binary header: read as empty, as grpc does


def _error(exc: Exception, context: GatewayContext) -> GatewayError:
    if isinstance(exc, GatewayError):
        return exc
    if isinstance(exc, TimeoutError):
        context.cancel()
        return GatewayError(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded")
    return GatewayError(grpc.StatusCode.UNAVAILABLE, f"the upstream call failed: {exc}")


def _grpc_timeout(seconds: float) -> str:
    """``grpc-timeout``: at most 8 digits, in the finest unit that fits."""
    millis = max(1, int(seconds * 1000))
    return f"{millis}m" if millis < 100_000_000 else f"{min(int(seconds), 99_999_999)}S"
