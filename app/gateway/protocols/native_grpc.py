"""Native gRPC (github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md) over the same routes,
gate, codec and invoker: binary envelopes in and out, the status in HTTP/2 trailers.

It needs a server that speaks HTTP/2 and sends trailers (ASGI's ``http.response.trailers``
extension): pyvoy does, uvicorn does not, and there a gRPC request is answered UNIMPLEMENTED
naming the gRPC port instead. Every header but HTTP's and gRPC's own is metadata, ``-bin`` values
in base64, as a grpc server passes them to its servicers. A unary call reads its one envelope
whole and answers in three ASGI events; streams run the enveloped flow every protocol shares.
"""

from __future__ import annotations

import asyncio
import binascii
import time
from collections.abc import AsyncIterator, Awaitable
from urllib.parse import unquote

import grpc
from google.protobuf.message import Message
from starlette.types import Receive, Scope, Send

from app.gateway import http_io
from app.gateway.codec import base64_text
from app.gateway.codec.envelopes import COMPRESSED, HEADER_BYTES, declared_length, envelope
from app.gateway.codec.wire_codecs import JsonCodec, ProtoCodec, WireCodec
from app.gateway.context import GatewayContext, Metadata
from app.gateway.errors import (
    BadRequest,
    GatewayError,
    grpc_status_fields,
    header_not_parsed,
    unsupported_encoding,
)
from app.gateway.http.compression import MIN_BYTES as COMPRESS_MIN_BYTES
from app.gateway.http.compression import gzip_bytes
from app.gateway.http.decompression import gunzip
from app.gateway.http_io import Ended, metadata_headers
from app.gateway.http_rules import BindingPlan
from app.gateway.invoker import Call, admit, grace_ended, unary_reply, unexpected_failure
from app.gateway.protocols.enveloped import ProtocolFlow, serve_enveloped
from app.gateway.stages import Stages
from app.observe.calls import Observation

CONTENT_TYPE = b"application/grpc"
_SUBTYPE = CONTENT_TYPE + b"+"  # application/grpc+proto, +json
CLIENT_CERT_HEADER = b"x-forwarded-client-cert"  # Envoy's, with the verified certificate
TRAILERS_EXTENSION = "http.response.trailers"
# What a request may compress with, and what this server says it accepts.
_ENCODINGS = (b"identity", b"gzip")
_ACCEPT_ENCODING = (b"grpc-accept-encoding", b"gzip")
# HTTP's own headers and gRPC's reserved ones: never metadata (PROTOCOL-HTTP2.md).
_NOT_METADATA = frozenset(
    {
        b"content-type",
        b"content-length",
        b"te",
        b"host",
        b"connection",
        b"keep-alive",
        b"transfer-encoding",
        b"upgrade",
        b"accept-encoding",
        b"x-request-id",
        CLIENT_CERT_HEADER,
    }
)


def is_native_grpc(content_type: bytes) -> bool:
    """``application/grpc``, ``application/grpc+proto|+json`` (not gRPC-Web's types)."""
    media = http_io.media_type(content_type)
    return media == CONTENT_TYPE or media.startswith(_SUBTYPE)


class NativeGrpcFlow(ProtocolFlow):
    """Serves one RPC's plan in native gRPC."""

    protocol = "grpc"

    def __init__(self, stages: Stages, proto: ProtoCodec, json_codec: JsonCodec) -> None:
        super().__init__(stages, proto, json_codec)
        # The wire of nearly every call (binary, uncompressed), built once: a wire holds only
        # what its request's headers chose.
        self._plain = GrpcWire(proto, {})

    def serve(
        self,
        plan: BindingPlan,
        scope: Scope,
        headers: http_io.Headers,
        observation: Observation,
        receive: Receive,
        send: Send,
    ) -> Awaitable[Ended]:
        request_id = observation.request_id
        if TRAILERS_EXTENSION not in scope.get("extensions", ()):
            return _without_trailers(send, request_id)
        serve = self._unary if plan.method.kind == "unary" else self._stream
        return serve(plan, scope, headers, request_id, observation, receive, send)

    async def _unary(
        self,
        plan: BindingPlan,
        scope: Scope,
        headers: http_io.Headers,
        request_id: str,
        observation: Observation,
        receive: Receive,
        send: Send,
    ) -> Ended:
        options = self.stages.options
        try:
            wire = self._wire(headers)
            call = self._call(plan, headers, request_id, scope, observation)
        except GatewayError as exc:
            await send_status_only(send, exc, request_id, None)
            return exc.code.name, 200
        context = call.context
        try:
            # Who is calling is settled first: an anonymous caller learns nothing from its input.
            await admit(call, options.authenticate)
            limit = options.max_body_bytes
            body = await http_io.read_body(
                receive, headers, limit + HEADER_BYTES, options.body_timeout_seconds
            )
            request = wire.only_message(body, plan, limit)
            watch = options.cancel_unary_on_disconnect
            reply = await unary_reply(self.stages.invoker, call, request, scope, watch)
            payload = wire.message(wire.codec.encode(plan, reply))
        except GatewayError as exc:
            await send_status_only(send, exc, request_id, context)
            return exc.code.name, 200
        except asyncio.CancelledError as cancelled:
            error = grace_ended(options.streams, context, cancelled)
            await send_status_only(send, error, request_id, context)
            return error.code.name, 200
        except Exception as exc:  # a hook's (the gate's, the idempotency keeper's)
            error = unexpected_failure(call, exc, options.known_errors)
            await send_status_only(send, error, request_id, context)
            return error.code.name, 200
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": wire.start_headers(request_id, context),
                "trailers": True,
            }
        )
        await send({"type": "http.response.body", "body": payload})
        await send({"type": "http.response.trailers", "headers": trailers(None, context)})
        return None

    async def _stream(
        self,
        plan: BindingPlan,
        scope: Scope,
        headers: http_io.Headers,
        request_id: str,
        observation: Observation,
        receive: Receive,
        send: Send,
    ) -> Ended:
        try:
            wire = self._wire(headers)
            call = self._call(plan, headers, request_id, scope, observation)
        except GatewayError as exc:
            await send_status_only(send, exc, request_id, None)
            return exc.code.name, 200
        return await serve_enveloped(self.stages, plan, call, wire, receive, send)

    async def refuse(
        self, send: Send, error: GatewayError, request_id: str, headers: http_io.Headers
    ) -> tuple[str, int]:
        await send_status_only(send, error, request_id, None)
        return error.code.name, 200

    def _call(
        self,
        plan: BindingPlan,
        headers: http_io.Headers,
        request_id: str,
        scope: Scope,
        observation: Observation,
    ) -> Call:
        """The call, with the client certificate the TLS server verified (when it says so)."""
        call = grpc_call(plan, headers, request_id, scope, observation)
        options = self.stages.options
        if options.client_certificate_header:
            call.context.client_certificate = client_certificate(headers)
        if options.grpc_client_certificate_required and call.context.client_certificate is None:
            raise GatewayError(
                grpc.StatusCode.UNAUTHENTICATED,
                "this server takes gRPC calls only with a client certificate its client CA "
                "signed (PORTICO_TLS_CLIENT_CA)",
            )
        return call

    def _wire(self, headers: http_io.Headers) -> GrpcWire:
        if headers.get(b"content-type") == CONTENT_TYPE and b"grpc-encoding" not in headers:
            return self._plain
        return GrpcWire(self._codec(headers), headers)

    def _codec(self, headers: http_io.Headers) -> WireCodec:
        subtype = http_io.media_type(headers.get(b"content-type", b"")).removeprefix(CONTENT_TYPE)
        if subtype in (b"", b"+proto"):
            return self.proto
        if subtype == b"+json":
            return self.json
        raise GatewayError(
            grpc.StatusCode.UNIMPLEMENTED,
            f"content type application/grpc{subtype.decode('latin-1')} is not served; "
            "allowed: application/grpc, application/grpc+proto, application/grpc+json",
        )


class GrpcWire:
    """gRPC's frames for one call: envelopes in the body, the status in the trailers.

    A client that compressed its request with gzip gets its replies compressed the same way
    (as grpc servers answer), each message of at least :data:`COMPRESS_MIN_BYTES`."""

    trailers = True

    def __init__(self, codec: WireCodec, headers: http_io.Headers) -> None:
        self.codec = codec
        self.content_type = CONTENT_TYPE if codec.name == "proto" else CONTENT_TYPE + b"+json"
        encoding = headers.get(b"grpc-encoding")
        # Present, it must name one (an empty value too): grpc core refuses every other.
        if encoding is not None and encoding not in _ENCODINGS:
            raise unsupported_encoding("grpc-encoding", encoding.decode("latin-1"))
        self.request_encoding = "" if encoding is None else encoding.decode("latin-1")
        self.compress = self.request_encoding == "gzip"
        # The reply's own headers, whatever the call: as the flows pass them (text), and
        # encoded once for the unary reply's start (see start_headers).
        self._extra: tuple[tuple[str, str], ...] = (("grpc-accept-encoding", "gzip"),)
        if self.compress:
            self._extra += (("grpc-encoding", "gzip"),)
        self._fixed_headers = [(key.encode(), value.encode()) for key, value in self._extra]

    def request_chunks(self, chunks: AsyncIterator[bytes | str]) -> AsyncIterator[bytes | str]:
        return chunks

    def headers(self, context: GatewayContext | None) -> tuple[tuple[str, str], ...]:
        if context is None or not context.initial_metadata:
            return self._extra
        return self._extra + metadata_headers(context.initial_metadata)

    def start_headers(
        self, request_id: str, context: GatewayContext | None
    ) -> list[tuple[bytes, bytes]]:
        """The reply's headers, as :func:`http_io.start` gives them with :meth:`headers`, built
        in one step (every unary call's reply starts here)."""
        return _reply_head(self.content_type, request_id, self._fixed_headers, context)

    def message(self, payload: bytes) -> bytes:
        if self.compress and len(payload) >= COMPRESS_MIN_BYTES:
            return envelope(COMPRESSED, gzip_bytes(payload))
        return envelope(0, payload)

    def end(self, error: GatewayError | None, context: GatewayContext) -> bytes:
        return b""  # nothing in the body: the status goes in the trailers

    def end_trailers(
        self, error: GatewayError | None, context: GatewayContext
    ) -> list[tuple[bytes, bytes]]:
        block = trailers(error, context)
        if error is not None:
            # The id in the trailers too, as the grpc.aio port's aborts have it: a grpc client
            # that sees a stream's status right after its headers at times surfaces none of
            # the latter (grpcio: about one refused stream in fifty), never without these.
            ids = [
                v
                for k, v in context.invocation_metadata()
                if k == "x-request-id" and isinstance(v, str)
            ]
            block += [(b"x-request-id", value.encode("latin-1")) for value in ids[:1]]
        return block

    def only_message(self, body: bytes, plan: BindingPlan, limit: int) -> Message:
        """The one request message of a unary call, from its whole body."""
        if len(body) < HEADER_BYTES:
            raise BadRequest(http_io.NO_MESSAGE)
        flags = body[0]
        length = declared_length(body)
        if len(body) != HEADER_BYTES + length:
            raise BadRequest(
                http_io.MORE_THAN_ONE
                if len(body) > HEADER_BYTES + length
                else "the request ends inside its message"
            )
        payload = body[HEADER_BYTES:]
        if flags & ~COMPRESSED:
            raise BadRequest(f"request message has unknown flags {flags:#04x}")
        if flags & COMPRESSED:
            if self.request_encoding != "gzip":
                raise BadRequest("the request message is compressed, but grpc-encoding names none")
            payload = gunzip(payload, limit)
        return self.codec.decode(payload, plan.method)


def grpc_call(
    plan: BindingPlan,
    headers: http_io.Headers,
    request_id: str,
    scope: Scope,
    observation: Observation,
) -> Call:
    """The call for a gRPC request: every custom header is metadata; ``grpc-timeout`` the
    deadline."""
    metadata, deadline = grpc_metadata(headers, request_id)
    if deadline is not None and deadline <= time.monotonic():
        # Over before it began (grpc-timeout: 0n): refused before the gate, as grpc core does.
        raise GatewayError(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded")
    context = GatewayContext(metadata, scope.get("client"), deadline)
    return Call(plan.method, request_id, headers, context, observation)


def client_certificate(headers: http_io.Headers) -> bytes | None:
    """The PEM of the ``Cert`` element of Envoy's ``x-forwarded-client-cert`` header: the
    certificate the client presented and the TLS server verified (the last hop's element)."""
    forwarded = headers.get(CLIENT_CERT_HEADER)
    if forwarded is None:
        return None
    element = forwarded.decode("latin-1").rsplit(",", 1)[-1]
    for pair in element.split(";"):
        key, _, value = pair.partition("=")
        if key.strip().lower() == "cert":
            return unquote(value.strip().strip('"')).encode()
    return None


# What each header name is to gRPC, learned once per name: its metadata key, or one of these.
_SKIPPED, _TIMEOUT = "", "grpc-timeout"
_names: dict[bytes, str] = {}
_NAMES_KEPT = 1024  # names learned at most (clients choose them): the rest are read each time


def _metadata_name(raw_key: bytes) -> str:
    """The metadata key of a header, :data:`_SKIPPED` for HTTP's and gRPC's own (the
    transport's, not the caller's: grpc-encoding and the like), or :data:`_TIMEOUT`."""
    if raw_key in _NOT_METADATA or raw_key.startswith(b":"):
        name = _SKIPPED
    elif raw_key.startswith(b"grpc-"):
        name = _TIMEOUT if raw_key == b"grpc-timeout" else _SKIPPED
    else:
        name = raw_key.decode("latin-1")
    if len(_names) < _NAMES_KEPT:
        _names[raw_key] = name
    return name


def grpc_metadata(headers: http_io.Headers, request_id: str) -> tuple[Metadata, float | None]:
    found: list[tuple[str, str | bytes]] = [("x-request-id", request_id)]
    deadline = None
    for raw_key, raw_value in headers.items():
        key = _names.get(raw_key)
        if key is None:
            key = _metadata_name(raw_key)
        if not key:
            continue
        # A value that does not parse is INTERNAL, in grpc core's words: the grpc.aio port's
        # answer, which grpc core gives before Portico sees the call.
        if key is _TIMEOUT:
            try:
                seconds = http_io.timeout_seconds(raw_value.decode("latin-1"))
            except BadRequest:
                raise header_not_parsed("grpc-timeout") from None
            deadline = time.monotonic() + seconds
        elif key.endswith("-bin"):
            try:
                found.append((key, base64_text.decode(raw_value)))
            except binascii.Error:
                raise header_not_parsed(key, "illegal base64 encoding") from None
        else:
            found.append((key, raw_value.decode("latin-1")))
    return tuple(found), deadline


def trailers(
    error: GatewayError | None, context: GatewayContext | None
) -> list[tuple[bytes, bytes]]:
    """The status (and trailing metadata) as gRPC's trailers (see
    :func:`~app.gateway.errors.grpc_status_fields`)."""
    if error is None:
        block = [(b"grpc-status", b"0")]
    else:
        block = [(name.encode(), value.encode()) for name, value in grpc_status_fields(error)]
    if context is not None and context.trailing_metadata_sent:
        block += [
            (key.encode("latin-1"), value.encode("latin-1"))
            for key, value in metadata_headers(context.trailing_metadata_sent)
        ]
    return block


def _reply_head(
    content_type: bytes,
    request_id: str,
    fixed: list[tuple[bytes, bytes]],
    context: GatewayContext | None,
) -> list[tuple[bytes, bytes]]:
    """A reply's first headers: its type, its request id, ``fixed`` and the servicer's metadata."""
    headers = [(b"content-type", content_type), (b"x-request-id", request_id.encode("latin-1"))]
    headers += fixed
    if context is not None and context.initial_metadata:
        headers += [
            (key.encode("latin-1"), value.encode("latin-1"))
            for key, value in metadata_headers(context.initial_metadata)
        ]
    return headers


async def send_status_only(
    send: Send, error: GatewayError, request_id: str, context: GatewayContext | None
) -> None:
    """Trailers-Only: a call that ends before any message is one block of headers that carries
    the status (and whatever metadata the servicer set)."""
    headers = _reply_head(CONTENT_TYPE, request_id, [_ACCEPT_ENCODING], context)
    headers += trailers(error, context)
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


async def _without_trailers(send: Send, request_id: str) -> Ended:
    error = GatewayError(
        grpc.StatusCode.UNIMPLEMENTED,
        "native gRPC needs HTTP/2 with trailers, which this server does not send: call the gRPC "
        "port, or run portico serve --server pyvoy",
    )
    await send_status_only(send, error, request_id, None)
    return error.code.name, 200
