"""Compressed replies: gzip when the client's ``Accept-Encoding`` asks for it.

A whole reply is compressed when it is at least :data:`MIN_BYTES` (below that, gzip's header and
the CPU cost more than the bytes saved). A stream is compressed message by message: each frame is
flushed (``Z_SYNC_FLUSH``) as it goes out, so a client decodes every message as soon as it
arrives and nothing waits for the compressor to fill a block.
"""

from __future__ import annotations

import gzip
import zlib

MIN_BYTES = 1024
# Level 6 balances CPU on two shared cores against bytes on the wire.
LEVEL = 6
# Every reply that may come compressed says so, for caches between here and the client.
VARY = ("vary", "accept-encoding")
GZIP = ("content-encoding", "gzip")


def accepts_gzip(header: bytes | None) -> bool:
    """Whether an ``accept-encoding``-style list names gzip, unless with ``q=0``."""
    for item in (header or b"").split(b","):
        name, _, params = item.partition(b";")
        if name.strip().lower() != b"gzip":
            continue
        for param in params.split(b";"):
            key, _, value = param.partition(b"=")
            if key.strip().lower() == b"q":
                try:
                    return float(value) > 0
                except ValueError:
                    return False
        return True
    return False


def gzip_bytes(data: bytes) -> bytes:
    """A whole reply, compressed."""
    return gzip.compress(data, compresslevel=LEVEL, mtime=0)


Headers = tuple[tuple[str, str], ...]


def whole_reply(payload: bytes, accept_encoding: bytes | None) -> tuple[bytes, Headers]:
    """A REST reply's body and the headers it needs: gzipped when asked for and worth it."""
    if len(payload) >= MIN_BYTES and accepts_gzip(accept_encoding):
        return gzip_bytes(payload), (VARY, GZIP)
    return payload, (VARY,)


class GzipStream:
    """One streamed response's gzip member, flushed after every frame."""

    def __init__(self) -> None:
        self._compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, 31)  # 31: a gzip wrapper

    def chunk(self, data: bytes) -> bytes:
        """``data`` compressed, and everything before it, decodable on arrival."""
        return self._compressor.compress(data) + self._compressor.flush(zlib.Z_SYNC_FLUSH)

    def end(self, data: bytes = b"") -> bytes:
        """The last bytes of the member (with ``data`` before them)."""
        return self._compressor.compress(data) + self._compressor.flush(zlib.Z_FINISH)
