"""Item: a REST body with ``Content-Encoding: gzip`` or ``zstd`` is decoded on every server,
within the body limit; any other coding is 415 naming the accepted ones. Before, both servers
handed the compressed bytes to the JSON parser: 400 "not valid JSON", whatever the coding."""

from __future__ import annotations

import gzip
import json
import time
import zlib
from pathlib import Path

import httpx
import zstandard

from tests.reliability.server import login, start_server


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


def _bomb() -> bytes:
    """64 MiB of zeros as gzip, in 64 KB: far over the 4 MiB body limit once decoded."""
    encoder = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1 << 20)
    return b"".join(encoder.compress(zeros) for _ in range(64)) + encoder.flush()


def test_compressed_bodies_are_decoded_within_the_limit(tmp_path: Path, http_server: str) -> None:
    served = start_server(tmp_path / "data", server=http_server)
    try:
        served.wait_ready()
        auth = {"authorization": f"Bearer {login(served)}"}
        with httpx.Client(base_url=served.base_url, headers=auth, timeout=30) as http:
            json_body = {"content-type": "application/json"}
            flavor = {"key": {"name": "x1.zipped"}, "ram": 1024, "vcpus": 1}
            created = http.post(
                "/create/flavor",
                content=gzip.compress(_json(flavor)),
                headers={**json_body, "content-encoding": "gzip"},
            )
            assert created.status_code == 200, created.text

            # A server stream's request body, in zstd.
            shown = http.post(
                "/show/flavor",
                content=zstandard.ZstdCompressor().compress(_json({"key": flavor["key"]})),
                headers={**json_body, "content-encoding": "zstd"},
            )
            assert shown.status_code == 200, shown.text
            results = [json.loads(line)["result"] for line in shown.text.splitlines() if line]
            assert [(r["key"]["name"], r["ram"]) for r in results] == [("x1.zipped", "1024")]

            # A client stream's NDJSON, decoded as it arrives: the node it names is unknown.
            status = gzip.compress(_json({"id": "ghost", "status": "RUNNING"}) + b"\n")
            reported = http.post(
                "/v1/scheduler/nodes:status",
                content=status,
                headers={"content-type": "application/x-ndjson", "content-encoding": "gzip"},
            )
            assert reported.status_code == 404, reported.text

            other = {"key": {"name": "x1.brotli"}, "ram": 1024, "vcpus": 1}
            refused = http.post(
                "/create/flavor",
                content=_json(other),
                headers={**json_body, "content-encoding": "br"},
            )
            assert refused.status_code == 415, refused.text
            assert refused.headers["accept-encoding"] == "zstd, gzip"
            assert "'br'" in refused.json()["message"]

            started = time.monotonic()
            bomb = http.post(
                "/create/flavor", content=_bomb(), headers={**json_body, "content-encoding": "gzip"}
            )
            assert bomb.status_code == 413, bomb.text
            assert "once decoded" in bomb.json()["message"]
            assert time.monotonic() - started < 5  # refused after 4 MiB, never inflated whole

            listed = http.post("/show/flavor", json={})
            names = [json.loads(line)["result"]["key"]["name"] for line in listed.text.splitlines()]
            assert "x1.zipped" in names and "x1.brotli" not in names
    finally:
        assert served.stop() == 0
