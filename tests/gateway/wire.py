"""Envelopes as the tests write and read them: independent of the gateway's own framing code."""

from __future__ import annotations

import struct


def frame(payload: bytes, flags: int = 0) -> bytes:
    return struct.pack(">BI", flags, len(payload)) + payload


def frames(body: bytes) -> list[tuple[int, bytes]]:
    """Every ``(flags, payload)`` of a body; a body that does not end on a frame fails."""
    found = []
    while body:
        flags, length = struct.unpack(">BI", body[:5])
        assert len(body) >= 5 + length, "truncated frame"
        found.append((flags, body[5 : 5 + length]))
        body = body[5 + length :]
    return found
