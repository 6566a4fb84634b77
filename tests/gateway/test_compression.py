"""Compressed REST replies, as a client sending ``Accept-Encoding`` sees them on the wire: a
whole reply of 1 KiB or more comes in zstd or gzip, whichever it prefers (zstd at equal
q-values), a small one never; a stream is compressed message by message, each decodable as soon
as it arrives; without the header nothing changes."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import zstandard

from tests.harness import run, running, uvicorn_serving

CLUSTERS = 24  # a list of them is well over 1 KiB of JSON


def _cluster(name: str) -> dict[str, object]:
    return {
        "name": name,
        "k8s_version": "1.31.2",
        "control_plane_nodes": {"count": 1, "instanceType": "standard"},
        "worker_node_pools": [{"name": "workers", "instanceType": "standard", "count": 2}],
    }


@contextlib.asynccontextmanager
async def signed_in_client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of a served Portico, signed in as the admin."""
    async with (
        running(tmp_path / "data") as served,
        uvicorn_serving(served.portico.http_app) as rest,
    ):
        auth = {"authorization": f"Bearer {await served.login()}"}
        async with httpx.AsyncClient(base_url=f"http://{rest}", headers=auth) as http:
            yield http


def test_rest_replies_are_gzipped_when_asked_and_worth_it(tmp_path) -> None:
    async def check() -> None:
        async with signed_in_client(tmp_path) as http:
            for number in range(CLUSTERS):
                created = await http.post("/api/v1/cluster", json=_cluster(f"c{number}"))
                assert created.status_code == 200, created.text

            async def raw(path: str, encoding: str | None) -> httpx.Response:
                headers = {} if encoding is None else {"accept-encoding": encoding}
                return await http.get(path, headers=headers)

            plain = await raw("/api/v1/cluster/list", "identity")
            assert "content-encoding" not in plain.headers
            assert plain.headers["vary"] == "accept-encoding"
            body = plain.content  # identity: the bytes as sent
            assert len(body) >= 1024

            zipped = await raw("/api/v1/cluster/list", "br;q=1, gzip;q=0.8")
            assert zipped.headers["content-encoding"] == "gzip"
            assert zipped.headers["vary"] == "accept-encoding"
            # The bytes on the wire (content-length) are a fraction; inflated, the same list
            # (whose statuses the simulation may have moved on meanwhile).
            assert int(zipped.headers["content-length"]) < len(body) / 3
            names = [c["name"] for c in json.loads(zipped.content)["clusters"]]
            assert names == [c["name"] for c in json.loads(body)["clusters"]]

            # A small reply is never gzipped, asked or not.
            small = await raw("/api/v1/version", "gzip")
            assert "content-encoding" not in small.headers
            assert len(small.content) < 1024
            refused = await raw("/api/v1/cluster/list", "gzip;q=0")
            assert "content-encoding" not in refused.headers

    run(check())


async def _raw(http: httpx.AsyncClient, path: str, encoding: str) -> tuple[httpx.Response, bytes]:
    """A reply and its body's bytes as they came on the wire (not decoded by the client)."""
    async with http.stream("GET", path, headers={"accept-encoding": encoding}) as response:
        return response, b"".join([chunk async for chunk in response.aiter_raw()])


def test_zstd_is_sent_to_a_client_preferring_it(tmp_path) -> None:
    async def check() -> None:
        async with signed_in_client(tmp_path) as http:
            for number in range(CLUSTERS):
                created = await http.post("/api/v1/cluster", json=_cluster(f"c{number}"))
                assert created.status_code == 200, created.text
            path = "/api/v1/cluster/list"
            _, body = await _raw(http, path, "identity")
            names = [c["name"] for c in json.loads(body)["clusters"]]

            # What a browser sends: zstd among equals is the one chosen.
            for accepted in ("gzip, deflate, br, zstd", "zstd", "*", "gzip;q=0.5, zstd;q=0.6"):
                reply, raw = await _raw(http, path, accepted)
                assert reply.headers["content-encoding"] == "zstd", accepted
                assert reply.headers["vary"] == "accept-encoding"
                assert int(reply.headers["content-length"]) == len(raw) < len(body) / 3
                decoded = json.loads(zstandard.ZstdDecompressor().decompress(raw))
                assert [c["name"] for c in decoded["clusters"]] == names

            # The client's q-values rule: gzip when it prefers gzip or refuses zstd.
            for accepted in ("zstd;q=0.5, gzip", "zstd;q=0, *", "gzip, zstd;q=0"):
                reply, raw = await _raw(http, path, accepted)
                assert reply.headers["content-encoding"] == "gzip", accepted
                assert [c["name"] for c in json.loads(gzip.decompress(raw))["clusters"]] == names
            for accepted in ("zstd;q=0", "*;q=0", "br"):
                reply, raw = await _raw(http, path, accepted)
                assert "content-encoding" not in reply.headers, accepted
                assert [c["name"] for c in json.loads(raw)["clusters"]] == names

            # A small reply is never compressed.
            small, raw = await _raw(http, "/api/v1/version", "zstd")
            assert "content-encoding" not in small.headers and len(raw) < 1024

    run(check())


async def _first_event_decodes(
    http: Any, accept_encoding: str, coding: str, decoder: Any, path: str, params: dict[str, str]
) -> None:
    """A stream asked for with ``accept_encoding`` comes in ``coding``, and what arrived of it
    while it is still open decodes on its own (``decoder``) into a whole first event."""
    headers = {"accept-encoding": accept_encoding, "accept": "text/event-stream"}
    request = http.build_request("GET", path, headers=headers, params=params)
    response = await http.send(request, stream=True)
    try:
        assert response.headers["content-encoding"] == coding
        assert response.headers["vary"] == "accept-encoding"
        text = ""
        chunks = response.aiter_raw()
        while "\n\n" not in text:
            chunk = await asyncio.wait_for(anext(chunks), 10)
            text += decoder.decompress(chunk).decode()
        assert text.startswith((":", "retry:", "event:", "id:", "data:")), text
    finally:
        await response.aclose()


def test_a_stream_comes_in_zstd_message_by_message(tmp_path) -> None:
    async def check() -> None:
        async with signed_in_client(tmp_path) as http:
            decoder = zstandard.ZstdDecompressor().decompressobj()
            params = {"filter.since_time": "1"}
            await _first_event_decodes(
                http, "gzip, zstd", "zstd", decoder, "/v1/runtime/events", params
            )

    run(check())


def test_a_stream_is_gzipped_message_by_message(tmp_path) -> None:
    async def check() -> None:
        async with signed_in_client(tmp_path) as http:
            path = "/v1/runtime/events"
            params = {"filter.since_time": "1"}
            await _first_event_decodes(http, "gzip", "gzip", zlib.decompressobj(31), path, params)
            # Without gzip among the encodings the same stream comes as it was.
            plain = http.build_request(
                "GET",
                path,
                headers={"accept": "text/event-stream", "accept-encoding": "identity"},
                params=params,
            )
            response = await http.send(plain, stream=True)
            try:
                assert "content-encoding" not in response.headers
            finally:
                await response.aclose()

    run(check())


def test_gzip_of_a_whole_reply_is_standard_gzip() -> None:
    from app.gateway.http.compression import GzipStream, ZstdStream, gzip_bytes, zstd_bytes

    data = json.dumps([{"name": f"n{i}"} for i in range(200)]).encode()
    assert gzip.decompress(gzip_bytes(data)) == data
    stream = GzipStream()
    parts = [stream.chunk(b"one\n"), stream.chunk(b"two\n"), stream.end(b"three\n")]
    assert gzip.decompress(b"".join(parts)) == b"one\ntwo\nthree\n"
    assert zstandard.ZstdDecompressor().decompress(zstd_bytes(data)) == data
    # A stream's frame decodes whole too, and each stream has a context of its own (one ended
    # stream's context serves the next).
    first, second = ZstdStream(), ZstdStream()
    parts = [first.chunk(b"one\n"), second.chunk(b"uno\n"), first.end(b"two\n")]
    third = ZstdStream()
    more = [third.chunk(b"eins\n"), second.end(b"dos\n"), third.end()]
    reader = zstandard.ZstdDecompressor()
    assert reader.decompressobj().decompress(b"".join(parts[::2])) == b"one\ntwo\n"
    assert reader.decompressobj().decompress(parts[1] + more[1]) == b"uno\ndos\n"
    assert reader.decompressobj().decompress(more[0] + more[2]) == b"eins\n"
