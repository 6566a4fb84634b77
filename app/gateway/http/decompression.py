"""Compressed request bodies and messages: gzip or zstd, decoded within the body limit.

A REST body may come with ``Content-Encoding: gzip`` or ``zstd`` (the codings replies come in,
:mod:`app.gateway.http.compression`); any other is refused with 415 and ``Accept-Encoding``
naming these (RFC 9110 §15.5.16). The limit holds for what the body decodes to, and decoding
stops as soon as it passes: a gzip bomb is refused after ``limit`` bytes of output, never
inflated whole. Connect's bodies and the protocols' gzipped messages go through the same
decoders, under their own rules for which coding a request may name.

A decoder is fed the body as it arrives and hands out what it decodes in pieces of at most
:data:`PIECE` bytes, so a client stream (NDJSON) is decoded and parsed as it goes and holds
little at a time. zlib bounds each call's output itself; python-zstandard's
``decompressobj`` does not (it returns all one call decodes), so it is fed a slice at a time:
zstd's smallest block (a 3-byte header and one byte repeated) decodes to 128 KiB, so a slice
of ``n`` bytes never yields more than ``n / 4 * 128 KiB``, however the input was made. A whole
body is decoded at once, its output dropped as soon as it passes the limit: 256-byte slices
(8 MiB at worst, for an instant; a 1,251-byte zstd body of 85 KB of JSON decodes in the time
one call takes, within the noise). A stream holds a slice's output while its messages are
read: 64-byte slices (2 MiB at worst; up to twice one call's time). A zstd frame may ask for
a window of up to :data:`ZSTD_MAX_WINDOW` (the 8 MB RFC 9659 asks decoders of the ``zstd``
coding to support); one asking for more is refused.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import AsyncIterator, Iterator, Mapping

import grpc
import zstandard

from app.gateway.errors import BadRequest, HttpRefusal
from app.gateway.http.compression import OFFERED

# The codings a request body may come in (those replies come in), as a 415 names them.
ACCEPTED = OFFERED
ACCEPT_ENCODING = ("accept-encoding", ", ".join(coding.decode() for coding in ACCEPTED))
# RFC 9110 §8.4.1.3: x-gzip is gzip.
_ALIASES = {b"x-gzip": b"gzip"}
_IDENTITY = (b"", b"identity")
PIECE = 64 * 1024
ZSTD_WHOLE_SLICE = 256
ZSTD_STREAM_SLICE = 64
ZSTD_MAX_WINDOW = 8 * 1024 * 1024
# Room for each zstd call's output: what a slice of ordinary data decodes to.
_ZSTD_WRITE_SIZE = 16 * 1024


def request_coding(headers: Mapping[bytes, bytes]) -> bytes | None:
    """The content coding of a request body (None: it comes as it is); 415 naming it and the
    accepted ones for a coding Portico does not decode, or for more than one."""
    given = headers.get(b"content-encoding")
    if given is None:
        return None
    coding = given.strip().lower()
    coding = _ALIASES.get(coding, coding)
    if coding in _IDENTITY:
        return None
    if coding in ACCEPTED:
        return coding
    accepted = " or ".join(name.decode() for name in ACCEPTED)
    raise HttpRefusal(
        grpc.StatusCode.UNIMPLEMENTED,
        f"content-encoding {given.decode('latin-1')!r} is not supported; send {accepted} "
        "(one coding), or the body as it is",
        http_status=415,
        headers=[ACCEPT_ENCODING],
    )


def decoded(coding: bytes, data: bytes, limit: int, what: str = "request body") -> bytes:
    """``data`` (a whole body or message) decoded from ``coding``; 413 once it decodes past
    ``limit`` bytes, 400 if it is corrupt or cut short."""
    if not data:
        return data
    decoder = _decoder(coding, what, whole=True)
    pieces: list[bytes] = []
    size = 0
    for piece in decoder.feed(data):
        size += len(piece)
        if size > limit:
            raise _too_large(what, limit)
        pieces.append(piece)
    decoder.finish()
    return b"".join(pieces)


def gunzip(data: bytes, limit: int) -> bytes:
    """A gzipped message (Connect, gRPC-Web, native gRPC) decoded within ``limit`` bytes; one
    flagged compressed must be gzip, even when empty."""
    if not data:
        raise BadRequest("the message is truncated: its gzip stream does not end")
    return decoded(b"gzip", data, limit, "message")


async def decoded_chunks(
    coding: bytes, chunks: AsyncIterator[bytes | str], what: str = "request body"
) -> AsyncIterator[bytes]:
    """A streamed body's chunks decoded from ``coding`` as they arrive, in pieces of at most
    :data:`PIECE` bytes (what reads them bounds each message); 400 if it is corrupt or ends
    cut short."""
    decoder = _decoder(coding, what, whole=False)
    async for chunk in chunks:
        for piece in decoder.feed(chunk.encode() if isinstance(chunk, str) else chunk):
            yield piece
    decoder.finish()


def _too_large(what: str, limit: int) -> HttpRefusal:
    return HttpRefusal(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        f"{what} exceeds the limit of {limit} bytes once decoded",
        http_status=413,
    )


class _Gzip:
    """A gzip body (one member or several, RFC 1952), decoded piece by piece."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        self._fed = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        self._fed = self._fed or bool(data)
        while data or not self._inflater.eof:
            inflater = self._inflater
            try:
                out = inflater.decompress(data, PIECE)
            except zlib.error as exc:
                raise BadRequest(f"the {self.what} is not valid gzip: {exc}") from None
            if out:
                yield out
            if inflater.eof:
                data = inflater.unused_data
                if not data:
                    return
                self._inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            else:
                data = inflater.unconsumed_tail
                if not data and len(out) < PIECE:
                    return  # all it was given is decoded (a full piece may leave more)

    def finish(self) -> None:
        if self._fed and not self._inflater.eof:
            raise BadRequest(f"the {self.what} is truncated: its gzip stream does not end")


# A context (its window included) is costly to make and serves one body at a time: a whole body
# is decoded at once, so one per thread serves them all; a stream keeps its own while it lasts.
_local = threading.local()


def _zstd_context(whole: bool) -> zstandard.ZstdDecompressor:
    if whole:
        context = getattr(_local, "zstd", None)
        if context is None:
            context = _local.zstd = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
        return context
    return zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)


class _Zstd:
    """A zstd body (one frame or several), decoded piece by piece."""

    def __init__(self, what: str, whole: bool) -> None:
        self.what = what
        self._context = _zstd_context(whole)
        self._slice = ZSTD_WHOLE_SLICE if whole else ZSTD_STREAM_SLICE
        self._frame = self._context.decompressobj(write_size=_ZSTD_WRITE_SIZE)
        self._in_frame = False  # the current frame has begun and not ended

    def feed(self, data: bytes) -> Iterator[bytes]:
        view = memoryview(data)
        size = self._slice
        while view:
            frame = self._frame
            try:
                out = frame.decompress(view[:size])
            except zstandard.ZstdError as exc:
                raise BadRequest(
                    f"the {self.what} is not valid zstd (or needs a window over "
                    f"{ZSTD_MAX_WINDOW >> 20} MiB): {exc}"
                ) from None
            view = view[size:]
            self._in_frame = not frame.eof
            if frame.eof:  # what is left of the slice begins the next frame
                rest = frame.unused_data
                self._frame = self._context.decompressobj(write_size=_ZSTD_WRITE_SIZE)
                if rest:
                    view = memoryview(rest + bytes(view))
            for start in range(0, len(out), PIECE):
                yield out[start : start + PIECE]
            del out  # not held while the next slice decodes

    def finish(self) -> None:
        if self._in_frame:
            raise BadRequest(f"the {self.what} is truncated: its zstd frame does not end")


def _decoder(coding: bytes, what: str, *, whole: bool) -> _Gzip | _Zstd:
    return _Zstd(what, whole) if coding == b"zstd" else _Gzip(what)
