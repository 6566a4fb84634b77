"""gRPC-Web (github.com/grpc/grpc/blob/master/doc/PROTOCOL-WEB.md) over the same routes, gate
and invoker: gRPC's envelopes over HTTP/1.1, with the trailers as a last frame in the body.

``application/grpc-web`` (``+proto`` or ``+json``) is binary; ``application/grpc-web-text``
is the same bytes in base64, for clients that cannot read binary streams. Every answer is
``200``: the status is in the trailer frame, so a proxy or browser never needs HTTP trailers.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable

from starlette.types import Receive, Scope, Send

from app.gateway import http_io
from app.gateway.codec.envelopes import base64_chunks, envelope
from app.gateway.codec.wire_codecs import WireCodec
from app.gateway.context import GatewayContext
from app.gateway.errors import (
    GatewayError,
    grpc_status_fields,
    unsupported_encoding,
    unsupported_media_type,
)
from app.gateway.http_io import Ended, metadata_headers
from app.gateway.http_rules import BindingPlan
from app.gateway.invoker import new_call
from app.gateway.protocols.enveloped import LastFrameWire, ProtocolFlow, serve_enveloped
from app.observe.calls import Observation

TRAILERS = 0x80
CONTENT_TYPE_PREFIX = "application/grpc-web"
_TEXT = "application/grpc-web-text"
_ENCODINGS = ("", "identity", "gzip")


class GrpcWebFlow(ProtocolFlow):
    """Serves one RPC's plan in gRPC-Web."""

    protocol = "grpc-web"

    def serve(
        self,
        plan: BindingPlan,
        scope: Scope,
        headers: http_io.Headers,
        observation: Observation,
        receive: Receive,
        send: Send,
    ) -> Awaitable[Ended]:
        mime = _mime(headers)
        wire = GrpcWebWire(mime, self.proto, mime.startswith(_TEXT), headers)
        return self._serve(plan, scope, headers, wire, observation, receive, send)

    async def _serve(
        self,
        plan: BindingPlan,
        scope: Scope,
        headers: http_io.Headers,
        wire: GrpcWebWire,
        observation: Observation,
        receive: Receive,
        send: Send,
    ) -> Ended:
        request_id = observation.request_id
        try:
            wire.codec = self._codec(wire.mime)
            if wire.request_encoding not in _ENCODINGS:
                raise unsupported_encoding("grpc-encoding", wire.request_encoding)
            call = new_call(plan.method, headers, request_id, scope, observation)
        except GatewayError as exc:
            return await _refuse(send, exc, request_id, wire)
        return await serve_enveloped(self.stages, plan, call, wire, receive, send)

    async def refuse(
        self, send: Send, error: GatewayError, request_id: str, headers: http_io.Headers
    ) -> tuple[str, int]:
        mime = _mime(headers)
        wire = GrpcWebWire(mime, self.proto, mime.startswith(_TEXT), headers)
        return await _refuse(send, error, request_id, wire)

    def _codec(self, mime: str) -> WireCodec:
        subtype = mime.removeprefix(_TEXT if mime.startswith(_TEXT) else CONTENT_TYPE_PREFIX)
        if subtype in ("", "+proto"):
            return self.proto
        if subtype == "+json":
            return self.json
        raise unsupported_media_type(mime, "application/grpc-web+proto or +json")


def _mime(headers: http_io.Headers) -> str:
    return http_io.media_type(headers.get(b"content-type", b"")).decode("latin-1")


async def _refuse(
    send: Send, error: GatewayError, request_id: str, wire: GrpcWebWire
) -> tuple[str, int]:
    """A call refused before it began: 200, and the status in the trailer frame."""
    await http_io.start(send, 200, wire.content_type, request_id, None)
    await send({"type": "http.response.body", "body": wire.end(error, None)})
    return error.code.name, 200


class GrpcWebWire(LastFrameWire):
    """gRPC-Web's frames for one call; in text mode, one base64 stream across all frames."""

    def __init__(self, mime: str, codec: WireCodec, text: bool, headers: http_io.Headers) -> None:
        self.codec = codec
        self.mime = mime
        self.text = text
        self.content_type = (mime or CONTENT_TYPE_PREFIX).encode()
        self.request_encoding = headers.get(b"grpc-encoding", b"").decode("latin-1")
        self._carry = b""  # text mode: bytes waiting for a whole 3-byte group

    def request_chunks(self, chunks: AsyncIterator[bytes | str]) -> AsyncIterator[bytes | str]:
        return base64_chunks(chunks) if self.text else chunks

    def headers(self, context: GatewayContext) -> tuple[tuple[str, str], ...]:
        return (("grpc-accept-encoding", "gzip"), *metadata_headers(context.initial_metadata))

    def message(self, payload: bytes) -> bytes:
        return self._out(envelope(0, payload), final=False)

    def end(self, error: GatewayError | None, context: GatewayContext | None) -> bytes:
        if error is None:
            lines = ["grpc-status: 0"]
        else:
            lines = [f"{name}: {value}" for name, value in grpc_status_fields(error, padded=True)]
        if context is not None:
            lines += [f"{k}: {v}" for k, v in metadata_headers(context.trailing_metadata_sent)]
        block = "".join(f"{line}\r\n" for line in lines).encode("latin-1", "replace")
        return self._out(envelope(TRAILERS, block), final=True)

    def _out(self, frame: bytes, final: bool) -> bytes:
        if not self.text:
            return frame
        data = self._carry + frame
        cut = len(data) if final else len(data) - len(data) % 3
        self._carry = data[cut:]
        return base64.b64encode(data[:cut])
