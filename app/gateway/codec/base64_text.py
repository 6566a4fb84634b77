"""Base64 as gRPC and its web protocols carry bytes in text (``-bin`` metadata,
``grpc-status-details-bin``, gRPC-Web's text bodies, Connect's GET messages and error details),
with one strictness everywhere: the standard alphabet (or, where the protocol says so, the
URL-safe one, never both), padding optional, any other character refused."""

from __future__ import annotations

import base64
import binascii

_URL_SAFE = bytes.maketrans(b"-_", b"+/")


def decode(text: bytes | str, *, url_safe: bool = False) -> bytes:
    """The bytes ``text`` encodes; ``binascii.Error`` if it is not base64 of that alphabet."""
    data = text.encode("latin-1") if isinstance(text, str) else text
    if url_safe:
        if b"+" in data or b"/" in data:
            raise binascii.Error("not the URL-safe alphabet")
        data = data.translate(_URL_SAFE)
    return base64.b64decode(data + b"=" * (-len(data) % 4), validate=True)


def encode(data: bytes) -> str:
    """``data`` in standard, padded base64."""
    return base64.b64encode(data).decode("ascii")


def encode_unpadded(data: bytes) -> str:
    """``data`` in standard base64 without padding (gRPC's ``-bin`` values, Connect's)."""
    return base64.b64encode(data).decode("ascii").rstrip("=")
