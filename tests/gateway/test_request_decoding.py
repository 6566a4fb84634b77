"""Compressed REST request bodies: ``Content-Encoding: gzip`` or ``zstd`` is decoded (a whole
body, and an NDJSON client stream as it arrives) with the body limit on what it decodes to;
any other coding is 415 naming it, with ``Accept-Encoding``. Before, such a body reached the
JSON parser as it was: 400 "not valid JSON", and a bomb was never told from garbage."""

from __future__ import annotations

import asyncio
import gzip
import json
import random
import struct
import tracemalloc
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import zstandard

from app.gateway.admission import NO_AUTH
from app.gateway.errors import GatewayError
from app.gateway.http import decompression
from app.gateway.routes import GatewayOptions

from .conftest import run, serving

JSON = {"content-type": "application/json"}
NDJSON = {"content-type": "application/x-ndjson"}
LIMIT = 64 * 1024


def _zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


def _zstd_streamed(data: bytes) -> bytes:
    """zstd as a streaming encoder writes it: no content size in the frame, several blocks."""
    encoder = zstandard.ZstdCompressor().compressobj()
    return encoder.compress(data) + encoder.flush()


ENCODE = {"gzip": gzip.compress, "zstd": _zstd}


def post(path: str, body: bytes, headers: dict[str, str], limit: int = LIMIT) -> Any:
    """POST ``body`` to the shelf app; the reply, and what the servicer was asked."""

    async def scenario() -> Any:
        options = GatewayOptions(authenticate=NO_AUTH, max_body_bytes=limit)
        async with serving(options) as served:
            reply = await served.http.post(path, content=body, headers=headers)
            return reply, list(served.servicer.requests)

    return run(scenario())


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", gzip.compress),
        ("zstd", _zstd),
        ("zstd", _zstd_streamed),
        ("x-gzip", gzip.compress),  # RFC 9110: the same as gzip
        ("GZip", gzip.compress),  # codings are case-insensitive
        ("identity", bytes),
    ],
)
def test_a_compressed_body_is_decoded(coding: str, encode: Any) -> None:
    body = json.dumps({"name": "shelves/s1/things/zipped", "tags": ["a", "b"]}).encode()
    reply, asked = post("/v1/things:echo", encode(body), {**JSON, "content-encoding": coding})
    assert reply.status_code == 200, reply.text
    assert reply.json()["name"] == "shelves/s1/things/zipped"
    assert [thing.name for thing in asked] == ["shelves/s1/things/zipped"]


@pytest.mark.parametrize("coding", ["br", "deflate", "compress", "gzip, zstd"])
def test_another_coding_is_415_naming_it_and_the_accepted_ones(coding: str) -> None:
    reply, asked = post("/v1/things:echo", b"{}", {**JSON, "content-encoding": coding})
    assert reply.status_code == 415
    assert reply.headers["accept-encoding"] == "zstd, gzip"
    message = reply.json()["message"]
    assert repr(coding) in message and "zstd or gzip" in message
    assert asked == []  # nothing reached the servicer


@pytest.mark.parametrize("coding", ["gzip", "zstd"])
def test_a_bomb_is_refused_by_its_decoded_size(coding: str) -> None:
    # Far under the limit on the wire, far over it decoded.
    bomb = ENCODE[coding](b'{"name": "' + b"x" * (4 * LIMIT) + b'"}')
    assert len(bomb) < LIMIT // 8
    reply, asked = post("/v1/things:echo", bomb, {**JSON, "content-encoding": coding})
    assert reply.status_code == 413
    assert f"{LIMIT} bytes once decoded" in reply.json()["message"]
    assert asked == []


def _bomb(coding: str, megabytes: int) -> bytes:
    """``megabytes`` MiB of zeros compressed, made without ever holding them."""
    zeros = bytes(1 << 20)
    if coding == "zstd":
        encoder = zstandard.ZstdCompressor(level=1).compressobj()
        return b"".join(encoder.compress(zeros) for _ in range(megabytes)) + encoder.flush()
    # A deflate block after a full flush stands alone: one MiB's block, repeated, is the stream.
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    last = zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(zeros, crc)
    size = (megabytes << 20) & 0xFFFFFFFF
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + block * megabytes + last + struct.pack("<II", crc, size)


@pytest.mark.parametrize("coding", ["gzip", "zstd"])
def test_a_quarter_gigabyte_bomb_is_refused_without_inflating_it(coding: str) -> None:
    small = _bomb(coding, 2)  # a real body of its coding, that a client could send
    assert decompression.decoded(coding.encode(), small, 2 << 20) == bytes(2 << 20)
    bomb = _bomb(coding, 256)
    assert len(bomb) < 512 * 1024
    tracemalloc.start()
    try:
        with pytest.raises(GatewayError) as refused:
            decompression.decoded(coding.encode(), bomb, 4 * 1024 * 1024)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused.value.http_status == 413
    # The limit's 4 MiB, with a piece and a slice's output (8 MiB at worst) beside it; never
    # the whole.
    assert peak < 16 * 1024 * 1024, peak

    # Streamed, it is decoded as it is read: what is held at once stays small all along.
    async def chunks() -> AsyncIterator[bytes | str]:
        for start in range(0, len(bomb), 65536):
            yield bomb[start : start + 65536]

    async def read_some() -> int:
        read = 0
        async for piece in decompression.decoded_chunks(coding.encode(), chunks()):
            read += len(piece)
            if read > 64 << 20:
                break
        return read

    tracemalloc.start()
    try:
        assert run(read_some()) > 64 << 20
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, peak  # a slice's output (2 MiB at worst) and a piece


@pytest.mark.parametrize(
    ("coding", "body", "problem"),
    [
        pytest.param("gzip", b"not gzip at all", "not valid gzip", id="gzip-corrupt"),
        pytest.param("zstd", b"not zstd at all", "not valid zstd", id="zstd-corrupt"),
        pytest.param("gzip", gzip.compress(b'{"name": "cut"}')[:-6], "truncated", id="gzip-cut"),
        pytest.param(
            "zstd", _zstd_streamed(b'{"name": "cut"}' * 100)[:-3], "truncated", id="zstd-cut"
        ),
    ],
)
def test_a_corrupt_or_cut_body_is_400_naming_the_coding(
    coding: str, body: bytes, problem: str
) -> None:
    reply, asked = post("/v1/things:echo", body, {**JSON, "content-encoding": coding})
    assert reply.status_code == 400
    assert problem in reply.json()["message"]
    assert asked == []


def test_an_empty_body_with_a_coding_is_an_empty_body() -> None:
    reply, _ = post("/v1/things:echo", b"", {**JSON, "content-encoding": "gzip"})
    assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("coding", ["gzip", "zstd"])
def test_a_compressed_client_stream_is_decoded_as_it_arrives(coding: str) -> None:
    names = [f"thing-{i}" for i in range(2000)]
    lines = b"".join(json.dumps({"name": name}).encode() + b"\n" for name in names)
    body = ENCODE[coding](lines)

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 700):  # many small reads, split anywhere
            yield body[start : start + 700]

    async def scenario() -> Any:
        async with serving() as served:
            return await served.http.post(
                "/v1/things:collect",
                content=chunks(),
                headers={**NDJSON, "content-encoding": coding},
            )

    reply = run(scenario())
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"count": len(names), "names": names}


@pytest.mark.parametrize("coding", ["gzip", "zstd"])
def test_a_client_stream_line_past_the_limit_once_decoded_is_413(coding: str) -> None:
    lines = b'{"name": "ok"}\n{"name": "' + b"x" * (2 * LIMIT) + b'"}\n'
    reply, _ = post(
        "/v1/things:collect", ENCODE[coding](lines), {**NDJSON, "content-encoding": coding}
    )
    assert reply.status_code == 413


def test_a_client_stream_in_another_coding_is_415() -> None:
    reply, _ = post("/v1/things:collect", b"{}", {**NDJSON, "content-encoding": "br"})
    assert reply.status_code == 415
    assert reply.headers["accept-encoding"] == "zstd, gzip"


def test_connect_keeps_its_own_codings() -> None:
    # Connect negotiates gzip only (its own error and Accept-Encoding); REST's zstd is not its.
    headers = {**JSON, "connect-protocol-version": "1"}
    body = json.dumps({"name": "c"}).encode()
    path = "/portico.test.v1.Shelf/EchoThing"
    zipped, _ = post(path, gzip.compress(body), {**headers, "content-encoding": "gzip"})
    assert zipped.status_code == 200 and zipped.json()["name"] == "c"
    other, asked = post(path, _zstd(body), {**headers, "content-encoding": "zstd"})
    assert (other.status_code, other.json()["code"]) == (501, "unimplemented")
    assert other.headers["accept-encoding"] == "gzip"
    assert asked == []


@pytest.mark.parametrize("coding", [b"gzip", b"zstd"])
def test_decoding_in_pieces_gives_the_body_however_it_is_split(coding: bytes) -> None:
    data = b"".join(b'{"n": %d}\n' % i for i in range(50_000))
    # Several gzip members, several zstd frames (a skippable one among them).
    if coding == b"gzip":
        blob = gzip.compress(data[:100_000]) + gzip.compress(data[100_000:])
    else:
        skippable = (0x184D2A50).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
        blob = _zstd(data[:100_000]) + skippable + _zstd_streamed(data[100_000:])
    assert decompression.decoded(coding, blob, len(data)) == data
    randomly = random.Random(7)

    async def chunks() -> AsyncIterator[bytes | str]:
        start = 0
        while start < len(blob):
            size = randomly.choice((1, 3, 64, 65, 1000, 70_000))
            yield blob[start : start + size]
            start += size

    async def decode() -> list[bytes]:
        return [piece async for piece in decompression.decoded_chunks(coding, chunks())]

    for _ in range(3):
        pieces = asyncio.run(decode())
        assert all(len(piece) <= decompression.PIECE for piece in pieces)
        assert b"".join(pieces) == data
