"""HTTP plumbing shared by every flow: request ids, headers ↔ gRPC metadata, bodies, responses.

Nothing here knows a method or a message: it turns ASGI events and headers into what a call
needs (metadata, a deadline, the body's bytes) and a call's outcome back into ASGI events.
"""

from __future__ import annotations

import asyncio
import binascii
import itertools
import os
import time
from collections.abc import AsyncIterator, Awaitable, Coroutine
from typing import Any, TypeVar

import grpc
from starlette.types import Receive, Scope, Send

from app.gateway import immediate
from app.gateway.codec import base64_text, streaming
from app.gateway.context import GatewayContext, Metadata
from app.gateway.errors import (
    STATUS_DETAILS_KEY,
    BadRequest,
    GatewayError,
    body_too_large,
    body_too_slow,
    unsupported_media_type,
)
from app.gateway.http import compression, reply_coding
from app.gateway.http.slow_reads import slow_reads
from app.observe.calls import Observation

Headers = dict[bytes, bytes]  # ASGI request headers, names in lower case
# How a call ended, when not OK with a 200: the gRPC code's name and the HTTP status sent.
Ended = tuple[str, int] | None
# nginx's "client closed request": the client went away before the reply.
CLIENT_CLOSED = 499

_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


_PERCENT, _QUESTION = ord("%"), ord("?")


def raw_path(scope: Scope) -> str:
    # Routing needs the undecoded path (an encoded "/" inside a variable is not a separator);
    # some servers put the query string in raw_path too.
    raw = scope.get("raw_path")
    # Bytes as ints: ``b"%" in raw`` takes several times longer, on every request.
    if not raw or (_PERCENT not in raw and _QUESTION not in raw):
        return scope["path"]  # the same text: nothing was decoded
    return raw.decode("latin-1").split("?", 1)[0]


# Request ids: a random per-process prefix and a counter, unique without a syscall per request;
# one number, its upper 64 bits the prefix, formatted in one step.
_request_numbers = itertools.count((int.from_bytes(os.urandom(8)) << 64) + 1)


def request_id(headers: Headers) -> str:
    given = headers.get(b"x-request-id")
    if given and len(given) <= 128:
        return given.decode("latin-1")
    return f"{next(_request_numbers):032x}"


_PASSED_HEADERS = frozenset(
    # if-match: update and delete calls check it against the stored revision.
    {b"authorization", b"x-forwarded-for", b"forwarded", b"idempotency-key", b"if-match"}
)


def trace_context(headers: Headers) -> tuple[str | None, str | None]:
    """The caller's W3C ``traceparent`` and ``tracestate`` headers, where given."""
    parent = headers.get(b"traceparent")
    if parent is None:
        return None, None
    state = headers.get(b"tracestate")
    return parent.decode("latin-1"), None if state is None else state.decode("latin-1")


def metadata(headers: Headers, request_id: str) -> tuple[Metadata, float | None]:
    """gRPC metadata and the deadline from HTTP headers (ASGI names them in lower case)."""
    found: list[tuple[str, str | bytes]] = [("x-request-id", request_id)]
    deadline = None
    for raw_key, raw_value in headers.items():
        if raw_key in _PASSED_HEADERS:
            # As gRPC metadata carries every header: the gate decides whether to believe the
            # forwarding ones (PORTICO_TRUSTED_PROXIES).
            found.append((raw_key.decode(), raw_value.decode("latin-1")))
        elif raw_key.startswith(b"grpc-"):
            key = raw_key.decode("latin-1")
            value = raw_value.decode("latin-1")
            if key.startswith("grpc-metadata-"):
                name = key[len("grpc-metadata-") :]
                if name.endswith("-bin"):
                    try:
                        found.append((name, base64_text.decode(value)))
                    except binascii.Error as exc:
                        raise BadRequest(
                            f"header {key} is not base64", [(key, "not base64")]
                        ) from exc
                else:
                    found.append((name, value))
            elif key == "grpc-timeout":
                deadline = time.monotonic() + timeout_seconds(value)
    return tuple(found), deadline


def timeout_seconds(value: str) -> float:
    """A ``grpc-timeout`` value (``10S``, ``500m``) in seconds; BadRequest if malformed."""
    unit = _TIMEOUT_UNITS.get(value[-1:])
    digits = value[:-1]
    if unit is None or not digits.isdigit() or len(digits) > 8:
        raise BadRequest(
            f"grpc-timeout {value!r} is not like 10S or 500m", [("grpc-timeout", "bad format")]
        )
    return int(digits) * unit


def media_type(content_type: bytes) -> bytes:
    """A ``Content-Type`` value's media type: lowercase, its parameters (``; charset=``) cut."""
    return content_type.split(b";", 1)[0].strip().lower()


def check_content_type(headers: Headers, *accepted: bytes) -> None:
    content_type = headers.get(b"content-type")
    if content_type is None:
        return  # curl without -H; the body must still be JSON
    if media_type(content_type) not in accepted:
        raise unsupported_media_type(content_type.decode("latin-1"), accepted[0].decode())


def check_length(headers: Headers, limit: int) -> None:
    length = headers.get(b"content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise body_too_large(limit)


def read_body(receive: Receive, headers: Headers, limit: int, timeout: float) -> Awaitable[bytes]:
    """The whole request body: 413 past ``limit`` bytes, 408 if it takes over ``timeout`` s."""
    if headers.get(b"content-length") == b"0":
        return immediate.EMPTY  # nothing to wait for (the commonest request: the empty message)
    check_length(headers, limit)
    return _read_body_within(receive, limit, timeout)


async def _read_body_within(receive: Receive, limit: int, timeout: float) -> bytes:
    # One coroutine (not SlowReads.within around a reader's): every call with a body passes.
    reads = slow_reads()
    task, cancelling = reads.enter(timeout)
    try:
        chunks: list[bytes] = []
        size = 0
        while True:
            event = await receive()
            if event["type"] == "http.disconnect":
                raise GatewayError(grpc.StatusCode.CANCELLED, "client went away")
            chunk = event.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise body_too_large(limit)
            if not event.get("more_body", False):
                if not chunks:
                    return bytes(chunk)  # the whole body in one event, the common case
                chunks.append(chunk)
                return b"".join(chunks)
            chunks.append(chunk)
    except asyncio.CancelledError:
        if reads.timed_out(task, cancelling):
            raise body_too_slow(timeout) from None
        raise
    finally:
        reads.leave(task)


T = TypeVar("T")
NO_MESSAGE = "the request has no message; this method takes exactly one"
MORE_THAN_ONE = "the request has more than one message; this method takes one"


async def only_message(messages: AsyncIterator[T], timeout: float) -> T:
    """The one request message of a call that takes one, and the end of its request, within
    ``timeout`` seconds (the body timeout: a call whose message never comes is 408
    DEADLINE_EXCEEDED); none or a second is INVALID_ARGUMENT."""
    try:
        return await slow_reads().within(timeout, _only(messages))
    except TimeoutError:
        raise body_too_slow(timeout) from None


async def _only(messages: AsyncIterator[T]) -> T:
    first = await anext(messages, None)
    if first is None:
        raise BadRequest(NO_MESSAGE)
    if await anext(messages, None) is not None:
        raise BadRequest(MORE_THAN_ONE)
    return first


def pump_cancelling_on_disconnect(
    receive: Receive, context: GatewayContext
) -> streaming.InboundPump:
    """Start reading the client; if it goes away, cancel the call's context and this task."""
    task = asyncio.current_task()
    assert task is not None

    def on_disconnect() -> None:
        context.cancel()
        task.cancel()

    pump = streaming.InboundPump(receive, on_disconnect)
    pump.start()
    return pump


async def run_call(work: Coroutine[Any, Any, Ended]) -> Ended:
    """Run a streaming call's flow as its own task, which a client going away cancels (see
    :func:`pump_cancelling_on_disconnect`): then the flow just ends, as CANCELLED; our own
    cancellation still propagates."""
    worker = asyncio.ensure_future(work)
    try:
        return await worker
    except asyncio.CancelledError:
        if not worker.cancelled():
            raise  # we were cancelled ourselves, not by a disconnect
        return "CANCELLED", CLIENT_CLOSED


async def observed(observation: Observation, flow: Awaitable[Ended]) -> None:
    """Run a call's flow and tell its telemetry how it ended: the code and the HTTP status that
    went out (INTERNAL/500 if something unexpected ended it)."""
    code, http_status = "INTERNAL", 500
    try:
        ended = await flow
        code, http_status = ("OK", 200) if ended is None else ended
    except asyncio.CancelledError:
        code, http_status = "CANCELLED", CLIENT_CLOSED
        raise
    finally:
        observation.end(code, http_status)


def _response_headers(
    content_type: bytes,
    request_id: str,
    context: GatewayContext | None,
    extra: tuple[tuple[str, str], ...] = (),
) -> list[tuple[bytes, bytes]]:
    headers = [(b"content-type", content_type), (b"x-request-id", request_id.encode("latin-1"))]
    if context is not None and (context.initial_metadata or context.trailing_metadata_sent):
        for key, value in (*context.initial_metadata, *context.trailing_metadata_sent):
            if key == STATUS_DETAILS_KEY:
                continue  # already the Status body
            if key == reply_coding.ETAG_KEY and isinstance(value, str):
                # The revision(s) the reply holds: HTTP's own validator, to revalidate always.
                headers.append((b"etag", value.encode("latin-1")))
                headers.append(reply_coding.NO_CACHE)
                continue
            text = base64_text.encode(value) if isinstance(value, bytes) else value
            headers.append((b"grpc-metadata-" + key.encode("latin-1"), text.encode("latin-1")))
    for key, text in extra:
        headers.append((key.encode(), text.encode("latin-1")))
    return headers


async def start(
    send: Send,
    status: int,
    content_type: bytes,
    request_id: str,
    context: GatewayContext | None,
    extra: tuple[tuple[str, str], ...] = (),
    *,
    trailers: bool = False,
) -> None:
    """Start a reply; ``trailers`` announces HTTP trailers after the body (native gRPC)."""
    headers = _response_headers(content_type, request_id, context, extra)
    await send(
        {"type": "http.response.start", "status": status, "headers": headers, "trailers": trailers}
    )


async def send_whole(
    send: Send,
    status: int,
    content_type: bytes,
    payload: bytes,
    request_id: str,
    context: GatewayContext | None,
    extra: tuple[tuple[str, str], ...] = (),
) -> None:
    headers = _response_headers(content_type, request_id, context, extra)
    # A known length lets the server send the reply in one piece instead of chunked.
    headers.append((b"content-length", str(len(payload)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


# How a call that ended well went out when its answer was not a 200: unchanged, as 304.
NOT_MODIFIED: Ended = ("OK", 304)


async def send_reply(
    send: Send, headers: Headers, payload: bytes, request_id: str, context: GatewayContext
) -> Ended:
    """A REST call's 200 reply: 304 with no body when ``If-None-Match`` names the reply's ETag,
    else the body, gzipped when the client accepts it and it is large enough to gain. How it
    went out: None for the 200, :data:`NOT_MODIFIED` for a 304 (so telemetry counts it so)."""
    etag = None
    if context.initial_metadata or context.trailing_metadata_sent:
        etag = reply_coding.etag_of((*context.initial_metadata, *context.trailing_metadata_sent))
    if etag is not None and reply_coding.none_match(headers.get(b"if-none-match"), etag):
        await send_not_modified(send, request_id, context)
        return NOT_MODIFIED
    body, extra = compression.whole_reply(payload, headers.get(b"accept-encoding"))
    await send_whole(send, 200, b"application/json", body, request_id, context, extra)
    return None


async def send_not_modified(send: Send, request_id: str, context: GatewayContext) -> None:
    """304 Not Modified: the reply's headers (its ETag among them) and no body."""
    headers = [
        (name, value)
        for name, value in _response_headers(b"application/json", request_id, context)
        if name != b"content-type"
    ]
    await send({"type": "http.response.start", "status": 304, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


async def send_error(
    send: Send,
    error: GatewayError,
    request_id: str,
    proto_names: bool,
    context: GatewayContext | None = None,
) -> None:
    """The error as a ``google.rpc.Status`` JSON body with its HTTP status."""
    payload = error.status_json(proto_names) + b"\n"  # a line, as every REST reply
    await send_whole(
        send, error.http_status, b"application/json", payload, request_id, context, error.headers
    )


def metadata_headers(metadata: Metadata, prefix: str = "") -> tuple[tuple[str, str], ...]:
    """Metadata as HTTP headers (``-bin`` values in base64), named with ``prefix``."""
    return tuple(
        (
            prefix + key,
            base64_text.encode(value) if isinstance(value, bytes) else value,
        )
        for key, value in metadata
        if not key.startswith("grpc-")
    )
