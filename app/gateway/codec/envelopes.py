"""Length-prefixed envelopes: the framing of gRPC, gRPC-Web and Connect streams, for the
protocols' flows and the proxy's HTTP/2 calls alike.

An envelope is one flags byte, a 4-byte big-endian length and that many bytes. Reading is
incremental and bounded: a declared length over the limit is refused before its bytes are
buffered, and a gzip payload may not inflate past the same limit.
"""

from __future__ import annotations

import binascii
from collections.abc import AsyncIterator

from app.gateway.codec import base64_text
from app.gateway.errors import BadRequest, body_too_large

COMPRESSED = 0x01  # the payload is compressed with the stream's encoding

# An envelope's head: its flags byte and its payload's length.
HEADER_BYTES = 5


def envelope(flags: int, payload: bytes) -> bytes:
    """One frame: flags, length, payload."""
    return bytes((flags,)) + len(payload).to_bytes(4, "big") + payload


def declared_length(buffer: bytes | bytearray) -> int:
    """The payload length the envelope at the start of ``buffer`` declares (a whole head)."""
    return int.from_bytes(buffer[1:HEADER_BYTES], "big")


async def read_envelopes(
    chunks: AsyncIterator[bytes | str], limit: int
) -> AsyncIterator[tuple[int, bytes]]:
    """``(flags, payload)`` of each envelope in a body, as the chunks arrive."""
    buffer = bytearray()
    async for chunk in chunks:
        buffer += chunk.encode() if isinstance(chunk, str) else chunk
        while len(buffer) >= HEADER_BYTES:
            length = declared_length(buffer)
            if length > limit:
                raise body_too_large(limit)
            if len(buffer) < HEADER_BYTES + length:
                break
            flags = buffer[0]
            payload = bytes(buffer[HEADER_BYTES : HEADER_BYTES + length])
            del buffer[: HEADER_BYTES + length]
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
        return b"".join(base64_text.decode(piece) for piece in text.split(b"=") if piece)
    except binascii.Error as exc:
        raise BadRequest(f"the request body is not base64: {exc}") from exc
