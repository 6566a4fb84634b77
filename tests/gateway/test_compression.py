"""Compressed REST replies, as a client sending ``Accept-Encoding: gzip`` sees them on the wire:
a whole reply of 1 KiB or more is gzipped, a small one never; a stream is gzipped message by
message, each decodable as soon as it arrives; without the header nothing changes."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

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


def test_a_stream_is_gzipped_message_by_message(tmp_path) -> None:
    async def check() -> None:
        async with signed_in_client(tmp_path) as http:
            path = "/v1/runtime/events"
            headers = {"accept-encoding": "gzip", "accept": "text/event-stream"}
            params = {"filter.since_time": "1"}
            request = http.build_request("GET", path, headers=headers, params=params)
            response = await http.send(request, stream=True)
            try:
                assert response.headers["content-encoding"] == "gzip"
                assert response.headers["vary"] == "accept-encoding"
                inflater = zlib.decompressobj(31)
                text = ""
                chunks = response.aiter_raw()
                # The stream stays open: what arrived so far must decode on its own.
                while "\n\n" not in text:
                    chunk = await asyncio.wait_for(anext(chunks), 10)
                    text += inflater.decompress(chunk).decode()
                assert text.startswith((":", "retry:", "event:", "id:", "data:")), text
            finally:
                await response.aclose()
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
    from app.gateway.http.compression import GzipStream, gzip_bytes

    data = json.dumps([{"name": f"n{i}"} for i in range(200)]).encode()
    assert gzip.decompress(gzip_bytes(data)) == data
    stream = GzipStream()
    parts = [stream.chunk(b"one\n"), stream.chunk(b"two\n"), stream.end(b"three\n")]
    assert gzip.decompress(b"".join(parts)) == b"one\ntwo\nthree\n"
