"""Compressed replies: zstd or gzip, whichever the client's ``Accept-Encoding`` prefers.

A whole reply is compressed when it is at least :data:`MIN_BYTES` (below that, a frame's header
and the CPU cost more than the bytes saved). A stream is compressed message by message: each
frame is flushed (gzip's ``Z_SYNC_FLUSH``, a finished zstd block) as it goes out, so a client
decodes every message as soon as it arrives and nothing waits for the compressor to fill a block.

zstd is offered first: on the benchmark's list of 1,000 clusters (85 KB of JSON) level 3 takes
about a ninth of gzip's instructions and sends 2.5x fewer bytes; on a 2.6 KB reply a quarter of
the instructions for the same bytes; on a stream of small messages, each flushed, a bit over
half. Brotli is not offered: at a quality near gzip's CPU it saves no bytes on small replies and
streams, and costs 1.1x (a reply) to 3x (a stream) gzip's instructions there (the numbers are
in the REST mapping's page of the docs).
"""

from __future__ import annotations

import gzip
import threading
import zlib

import zstandard

MIN_BYTES = 1024
# Level 6 balances CPU on two shared cores against bytes on the wire.
LEVEL = 6
# zstd's default level: already smaller than gzip's 6 and far cheaper; higher ones cost
# several times the CPU for a few bytes.
ZSTD_LEVEL = 3
# Every reply that may come compressed says so, for caches between here and the client.
VARY = ("vary", "accept-encoding")
GZIP = ("content-encoding", "gzip")
ZSTD = ("content-encoding", "zstd")

# The content codings REST replies and streams come in, best first: at equal q-values the
# client gets the first it accepts.
OFFERED = (b"zstd", b"gzip")
# Connect negotiates its own compression (gzip only, see the protocol's room).
GZIP_ONLY = (b"gzip",)
_HEADERS = {b"zstd": ZSTD, b"gzip": GZIP}


def preferred(header: bytes | None, offered: tuple[bytes, ...] = OFFERED) -> bytes | None:
    """The coding of ``offered`` an ``accept-encoding``-style list gives the highest q-value
    (the earliest in ``offered`` among equals; ``*`` stands for those it does not name); None
    when it accepts none of them (q=0 refuses one), or has no list: identity then."""
    if not header:
        return None
    weights: dict[bytes, float] = {}
    for item in header.split(b","):
        name, _, params = item.partition(b";")
        weight = 1.0
        for param in params.split(b";"):
            key, _, value = param.partition(b"=")
            if key.strip().lower() == b"q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
                break
        weights[name.strip().lower()] = weight
    anything = weights.get(b"*", 0.0)
    best, best_weight = None, 0.0
    for coding in offered:
        weight = weights.get(coding, anything)
        if weight > best_weight:
            best, best_weight = coding, weight
    return best


def accepts_gzip(header: bytes | None) -> bool:
    """Whether an ``accept-encoding``-style list accepts gzip (not with ``q=0``)."""
    return preferred(header, GZIP_ONLY) is not None


def gzip_bytes(data: bytes) -> bytes:
    """A whole reply, gzipped."""
    return gzip.compress(data, compresslevel=LEVEL, mtime=0)


# A zstd context is costly to make (a tenth of a millisecond) and cheap to reuse, but one may
# serve one compression at a time: one per thread for whole replies.
_local = threading.local()


def zstd_bytes(data: bytes) -> bytes:
    """A whole reply as one zstd frame (its size in the header)."""
    compressor = getattr(_local, "zstd", None)
    if compressor is None:
        compressor = _local.zstd = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    return compressor.compress(data)


_COMPRESS = {b"zstd": zstd_bytes, b"gzip": gzip_bytes}

Headers = tuple[tuple[str, str], ...]


def whole_reply(
    payload: bytes, accept_encoding: bytes | None, offered: tuple[bytes, ...] = OFFERED
) -> tuple[bytes, Headers]:
    """A reply's body and the headers it needs: compressed in the coding the client prefers
    among ``offered``, when it accepts one and the body is large enough to gain."""
    if len(payload) >= MIN_BYTES:
        coding = preferred(accept_encoding, offered)
        if coding is not None:
            return _COMPRESS[coding](payload), (VARY, _HEADERS[coding])
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


# A stream's messages are small and each is flushed on its own: a 64 KiB window (rather than
# the level's megabytes for input of unknown size) makes its context several times cheaper.
_STREAM_PARAMS = zstandard.ZstdCompressionParameters.from_level(ZSTD_LEVEL, source_size=1 << 16)
# Contexts of ended streams, for the next ones (at most this many kept).
_IDLE_LIMIT = 64
_idle: list[zstandard.ZstdCompressor] = []


class ZstdStream:
    """One streamed response's zstd frame, a block ended and flushed after every frame."""

    def __init__(self) -> None:
        try:
            self._context = _idle.pop()  # atomic: a context serves one stream at a time
        except IndexError:
            self._context = zstandard.ZstdCompressor(compression_params=_STREAM_PARAMS)
        self._compressor = self._context.compressobj()

    def chunk(self, data: bytes) -> bytes:
        """``data`` compressed, and everything before it, decodable on arrival."""
        compressor = self._compressor
        return compressor.compress(data) + compressor.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)

    def end(self, data: bytes = b"") -> bytes:
        """The last bytes of the frame (with ``data`` before them)."""
        compressor = self._compressor
        tail = compressor.compress(data) + compressor.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)
        if len(_idle) < _IDLE_LIMIT:
            _idle.append(self._context)
        return tail


StreamCoder = GzipStream | ZstdStream


def stream_coder(accept_encoding: bytes | None) -> tuple[StreamCoder | None, Headers]:
    """How a stream's frames go out for a client's ``Accept-Encoding``, and the headers that
    say so: compressed in the coding it prefers, or as they are (None)."""
    coding = preferred(accept_encoding)
    if coding is None:
        return None, (VARY,)
    return (ZstdStream() if coding == b"zstd" else GzipStream()), (VARY, _HEADERS[coding])
