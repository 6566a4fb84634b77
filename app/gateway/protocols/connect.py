"""The Connect protocol (connectrpc.com/docs/protocol) over the same routes, gate and invoker.

Unary calls are plain HTTP: ``POST`` with an ``application/json`` or ``application/proto`` body
(``GET`` with ``?message=`` for methods marked ``NO_SIDE_EFFECTS``), the reply as the body, an
error as Connect's JSON ``{"code": "not_found", "message": ..., "details": [...]}`` with the
HTTP status of its code. Streams use ``application/connect+json|+proto`` envelopes and end with
an end-stream frame carrying the error and trailers (see :mod:`app.gateway.protocols.enveloped`).
"""

from __future__ import annotations

import asyncio
import binascii
import json
import time
from collections.abc import AsyncIterator, Awaitable

import grpc
from starlette.types import Receive, Scope, Send

from app.gateway import http_io
from app.gateway.codec import base64_text
from app.gateway.codec.envelopes import COMPRESSED, envelope
from app.gateway.codec.transcoding import query_pairs
from app.gateway.codec.wire_codecs import JsonCodec, ProtoCodec, WireCodec
from app.gateway.context import GatewayContext
from app.gateway.errors import (
    BadRequest,
    GatewayError,
    HttpRefusal,
    unsupported_encoding,
    unsupported_media_type,
)
from app.gateway.http.compression import GZIP_ONLY, accepts_gzip, gzip_bytes, whole_reply
from app.gateway.http.compression import MIN_BYTES as COMPRESS_MIN_BYTES
from app.gateway.http.decompression import gunzip
from app.gateway.http_io import Ended, metadata_headers
from app.gateway.http_rules import BindingPlan
from app.gateway.invoker import admit, grace_ended, new_call, unary_reply, unexpected_failure
from app.gateway.protocols.enveloped import LastFrameWire, ProtocolFlow, serve_enveloped
from app.gateway.stages import Stages
from app.observe.calls import Observation

# Connect's code names are gRPC's in snake case, but for its American "canceled".
CODE_NAMES: dict[grpc.StatusCode, str] = {
    code: "canceled" if code is grpc.StatusCode.CANCELLED else code.name.lower()
    for code in grpc.StatusCode
}
END_STREAM = 0x02
# Replies smaller than this are sent as they are: gzip would cost more than it saves.
_ENCODINGS = ("gzip", "identity")
_ACCEPT_ENCODING = "gzip"
_UNARY_TYPES = {"proto": b"application/proto", "json": b"application/json"}


def error_dict(error: GatewayError) -> dict[str, object]:
    """A Connect error: code name, message, and details as ``{type, value}`` (base64)."""
    found: dict[str, object] = {"code": CODE_NAMES[error.code]}
    if error.message:
        found["message"] = error.message
    if error.details:
        found["details"] = [
            {
                "type": detail.type_url.rsplit("/", 1)[-1],
                "value": base64_text.encode_unpadded(detail.value),
            }
            for detail in error.details
        ]
    return found


class ConnectFlow(ProtocolFlow):
    """Serves one RPC's plan in the Connect protocol."""

    protocol = "connect"

    def __init__(self, stages: Stages, proto: ProtoCodec, json_codec: JsonCodec) -> None:
        super().__init__(stages, proto, json_codec)
        # By the exact content type, as clients send it.
        self._unary_codecs: dict[bytes, WireCodec] = {
            _UNARY_TYPES[codec.name]: codec for codec in (proto, json_codec)
        }

    def codec_for(self, name: str) -> WireCodec | None:
        return self.proto if name == "proto" else self.json if name == "json" else None

    async def refuse(
        self, send: Send, error: GatewayError, request_id: str, headers: http_io.Headers
    ) -> tuple[str, int]:
        return await _send_error(send, error, request_id)

    def serve(
        self,
        plan: BindingPlan,
        scope: Scope,
        headers: http_io.Headers,
        observation: Observation,
        receive: Receive,
        send: Send,
    ) -> Awaitable[Ended]:
        serve = self._unary if plan.method.kind == "unary" else self._stream
        return serve(plan, scope, headers, observation.request_id, observation, receive, send)

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
            call = new_call(plan.method, headers, request_id, scope, observation)
            _check_version(headers.get(b"connect-protocol-version", b"1").decode("latin-1"))
            wire = ConnectStreamWire(self._stream_codec(headers), headers)
            _apply_timeout(call.context, headers)
        except GatewayError as exc:
            return await _send_error(send, exc, request_id)
        return await serve_enveloped(self.stages, plan, call, wire, receive, send)

    def _stream_codec(self, headers: http_io.Headers) -> WireCodec:
        mime = _mime(headers)
        codec = None
        if mime.startswith("application/connect+"):
            codec = self.codec_for(mime.removeprefix("application/connect+"))
        if codec is None:
            expected = "application/connect+json or application/connect+proto"
            raise unsupported_media_type(mime, expected)
        encoding = headers.get(b"connect-content-encoding", b"identity").decode("latin-1")
        _check_encoding(encoding, "connect-content-encoding")
        return codec

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
        try:
            call = new_call(plan.method, headers, request_id, scope, observation)
        except GatewayError as exc:
            return await _send_error(send, exc, request_id)
        context = call.context
        try:
            query = _query(scope) if scope["method"] == "GET" else None
            if query is not None:
                _check_get(plan, query)
                _check_version(query.get("connect", "v1").removeprefix("v"))
            elif (version := headers.get(b"connect-protocol-version", b"1")) != b"1":
                _check_version(version.decode("latin-1"))
            if b"connect-timeout-ms" in headers:
                _apply_timeout(context, headers)
            # Who is calling is settled first: an anonymous caller learns nothing from its input.
            await admit(call, self.stages.options.authenticate)
            limit = self.stages.options.max_body_bytes
            if query is not None:
                codec, body = self._get_request(plan, query, limit)
            else:
                codec = self._post_codec(headers)
                timeout = self.stages.options.body_timeout_seconds
                body = await http_io.read_body(receive, headers, limit, timeout)
                body = _decoded_body(headers, body, limit)
            request = codec.decode(body, plan.method)
            watch = self.stages.options.cancel_unary_on_disconnect
            reply = await unary_reply(self.stages.invoker, call, request, scope, watch)
        except GatewayError as exc:
            return await _send_error(send, exc, request_id, context)
        except asyncio.CancelledError as cancelled:
            error = grace_ended(self.stages.options.streams, context, cancelled)
            return await _send_error(send, error, request_id, context)
        except Exception as exc:  # a hook's (the gate's, the idempotency keeper's)
            error = unexpected_failure(call, exc, self.stages.options.known_errors)
            return await _send_error(send, error, request_id, context)
        payload = codec.encode(plan, reply)
        extra = _reply_metadata(context)
        # Connect's own negotiation: gzip or nothing, whatever REST offers.
        payload, coding = whole_reply(payload, headers.get(b"accept-encoding"), GZIP_ONLY)
        extra += coding
        content_type = _UNARY_TYPES[codec.name]
        await http_io.send_whole(send, 200, content_type, payload, request_id, None, extra)
        return None

    def _post_codec(self, headers: http_io.Headers) -> WireCodec:
        codec = self._unary_codecs.get(headers.get(b"content-type", b""))
        if codec is None:  # parameters (charset), capitals, or another type
            mime = _mime(headers)
            codec = self.codec_for(
                mime.removeprefix("application/") if mime.startswith("application/") else ""
            )
        if codec is None:
            raise unsupported_media_type(_mime(headers), "application/json or application/proto")
        return codec

    def _get_request(
        self, plan: BindingPlan, query: dict[str, str], limit: int
    ) -> tuple[WireCodec, bytes]:
        if not plan.method.side_effect_free:
            raise HttpRefusal(
                grpc.StatusCode.UNIMPLEMENTED,
                f"{plan.method.full_name} has side effects: call it with POST",
                http_status=405,
                headers=[("allow", "POST")],
            )
        codec = self.codec_for(query.get("encoding", ""))
        if codec is None:
            raise BadRequest(
                "query parameter encoding must be json or proto",
                [("encoding", "json or proto")],
            )
        text = query.get("message", "")
        if query.get("base64") == "1":
            try:
                body = base64_text.decode(text, url_safe=True)
            except (binascii.Error, ValueError) as exc:
                raise BadRequest(
                    "query parameter message is not base64", [("message", str(exc))]
                ) from exc
        else:
            body = text.encode()
        encoding = query.get("compression", "identity")
        _check_encoding(encoding, "compression")
        if len(body) > limit:
            raise BadRequest("query parameter message is too long", [("message", "too long")])
        return codec, gunzip(body, limit) if encoding == "gzip" else body


class ConnectStreamWire(LastFrameWire):
    """Connect's stream frames: message envelopes, then an end-stream JSON envelope.

    A client that sends ``connect-accept-encoding: gzip`` gets the stream marked
    ``connect-content-encoding: gzip`` and each message of at least
    :data:`COMPRESS_MIN_BYTES` compressed, with the envelope's compressed flag set; smaller
    messages and the end-stream frame go as they are (the flag tells which)."""

    def __init__(self, codec: WireCodec, headers: http_io.Headers) -> None:
        self.codec = codec
        self.content_type = b"application/connect+" + codec.name.encode()
        self.request_encoding = headers.get(b"connect-content-encoding", b"").decode("latin-1")
        self.compress = accepts_gzip(headers.get(b"connect-accept-encoding"))

    def request_chunks(self, chunks: AsyncIterator[bytes | str]) -> AsyncIterator[bytes | str]:
        return chunks

    def headers(self, context: GatewayContext) -> tuple[tuple[str, str], ...]:
        extra: tuple[tuple[str, str], ...] = (("connect-accept-encoding", _ACCEPT_ENCODING),)
        if self.compress:
            extra += (("connect-content-encoding", "gzip"),)
        return extra + metadata_headers(context.initial_metadata)

    def message(self, payload: bytes) -> bytes:
        if self.compress and len(payload) >= COMPRESS_MIN_BYTES:
            return envelope(COMPRESSED, gzip_bytes(payload))
        return envelope(0, payload)

    def end(self, error: GatewayError | None, context: GatewayContext) -> bytes:
        end: dict[str, object] = {}
        if error is not None:
            end["error"] = error_dict(error)
        trailers: dict[str, list[str]] = {}
        for key, value in metadata_headers(context.trailing_metadata_sent):
            trailers.setdefault(key, []).append(value)
        if trailers:
            end["metadata"] = trailers
        return envelope(END_STREAM, json.dumps(end, separators=(",", ":")).encode())


async def _send_error(
    send: Send, error: GatewayError, request_id: str, context: GatewayContext | None = None
) -> tuple[str, int]:
    """Answer with Connect's error JSON; how the call ended."""
    payload = json.dumps(error_dict(error), separators=(",", ":")).encode()
    extra = error.headers
    if context is not None:
        extra += _reply_metadata(context)
    await http_io.send_whole(
        send, error.http_status, b"application/json", payload, request_id, None, extra
    )
    return error.code.name, error.http_status


def _reply_metadata(context: GatewayContext) -> tuple[tuple[str, str], ...]:
    """A unary reply's metadata: initial as headers, trailing as ``trailer-`` headers."""
    if not (context.initial_metadata or context.trailing_metadata_sent):
        return ()
    return metadata_headers(context.initial_metadata) + metadata_headers(
        context.trailing_metadata_sent, "trailer-"
    )


def _decoded_body(headers: http_io.Headers, body: bytes, limit: int) -> bytes:
    """A POSTed body as its ``Content-Encoding`` left it, unzipped."""
    encoding = headers.get(b"content-encoding")
    if encoding is None:
        return body
    _check_encoding(encoding.decode("latin-1"), "content-encoding")
    return gunzip(body, limit) if encoding == b"gzip" else body


def _mime(headers: http_io.Headers) -> str:
    raw = headers.get(b"content-type", b"")
    return raw.split(b";", 1)[0].strip().lower().decode("latin-1")


def _query(scope: Scope) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    try:
        return dict(query_pairs(raw))  # a name given twice: the last one counts
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequest(f"query string is not valid UTF-8: {exc}") from exc


def _check_get(plan: BindingPlan, query: dict[str, str]) -> None:
    """A Connect GET names its ``encoding`` and ``message``: a GET naming neither is a plain
    HTTP GET of a path that is POST only (as the OpenAPI document says), so 405 with Allow."""
    if "encoding" not in query and "message" not in query:
        raise HttpRefusal(
            grpc.StatusCode.UNIMPLEMENTED,
            f"GET is not allowed on {plan.method.grpc_path} without Connect's encoding and "
            "message query parameters; allowed: POST",
            http_status=405,
            headers=[("allow", "POST")],
        )


def _check_version(version: str) -> None:
    if version != "1":
        raise BadRequest(
            f"Connect protocol version {version!r} is not supported; this server speaks 1",
            [("connect-protocol-version", "must be 1")],
        )


def _check_encoding(encoding: str, where: str) -> None:
    if encoding not in _ENCODINGS:
        raise unsupported_encoding(where, encoding, [("accept-encoding", _ACCEPT_ENCODING)])


def _apply_timeout(context: GatewayContext, headers: http_io.Headers) -> None:
    """``Connect-Timeout-Ms``: up to 10 digits of milliseconds, as the protocol allows."""
    raw = headers.get(b"connect-timeout-ms")
    if raw is None:
        return
    if not raw.isdigit() or len(raw) > 10:
        raise BadRequest(
            f"connect-timeout-ms {raw.decode('latin-1')!r} is not a number of milliseconds",
            [("connect-timeout-ms", "1 to 10 digits")],
        )
    deadline = time.monotonic() + int(raw) / 1000
    if context.deadline is None or deadline < context.deadline:
        context.deadline = deadline
