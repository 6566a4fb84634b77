"""Length-prefixed envelopes, the framing Connect streams and gRPC-Web share, and gzip.

An envelope is one flags byte, a 4-byte big-endian length and that many bytes. Reading is
incremental and bounded: a declared length over the limit is refused before its bytes are
buffered, and a gzip payload may not inflate past the same limit.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator

from app.gateway.errors import BadRequest, body_too_large

COMPRESSED = 0x01  # the payload is compressed with the stream's encoding

_HEADER = 5


def envelope(flags: int, payload: bytes) -> bytes:
    """One frame: flags, length, payload."""
    return bytes((flags,)) + len(payload).to_bytes(4, "big") + payload


async def read_envelopes(
    chunks: AsyncIterator[bytes | str], limit: int
) -> AsyncIterator[tuple[int, bytes]]:
    """``(flags, payload)`` of each envelope in a body, as the chunks arrive."""
    buffer = bytearray()
    async for chunk in chunks:
        buffer += chunk.encode() if isinstance(chunk, str) else chunk
        while len(buffer) >= _HEADER:
            length = int.from_bytes(buffer[1:_HEADER], "big")
            if length > limit:
                raise body_too_large(limit)
            if len(buffer) < _HEADER + length:
                break
            flags = buffer[0]
            payload = bytes(buffer[_HEADER : _HEADER + length])
            del buffer[: _HEADER + length]
            yield flags, payload
    if buffer:
        raise BadRequest(f"the request ends inside an envelope ({len(buffer)} bytes left over)")


async def base64_chunks(chunks: AsyncIterator[bytes | str]) -> AsyncIterator[bytes]:
    """Decode a base64 body (gRPC-Web text) as it arrives; padded pieces may be concatenated."""
    pending = b""
    async for chunk in chunks:
        raw = chunk.encode() if isinstance(chunk, str) else chunk
        pending += raw.replace(b"\r", b"").replace(b"\n", b"")
        whole = len(pending) - len(pending) % 4
        if whole:
            yield _b64decode(pending[:whole])
            pending = pending[whole:]
    if pending.strip():
        raise BadRequest("the base64 request body is truncated")


def _b64decode(text: bytes) -> bytes:
    try:
        # Each padded piece decodes on its own: a writer may flush mid-stream.
        return b"".join(
            base64.b64decode(piece + b"=" * (-len(piece) % 4), validate=True)
            for piece in text.split(b"=")
            if piece
        )
    except binascii.Error as exc:
        raise BadRequest(f"the request body is not base64: {exc}") from exc
