"""Item: a request head is bounded in size on every server. A megabyte header, or ten thousand
headers, were read whole and answered 200 under uvicorn (Envoy answered 431): now both refuse a
head past the same limits (``MAX_REQUEST_HEAD_BYTES``, ``MAX_REQUEST_HEADERS``) with 431 and
close the connection, and a head within them is answered as before."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from starlette.types import Receive, Scope, Send

from app.settings.limits import MAX_REQUEST_HEAD_BYTES, MAX_REQUEST_HEADERS
from tests.harness import run, uvicorn_serving
from tests.reliability.server import start_server

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: portico\r\n"
# Each case is answered within this, or the connection was held (as it was before).
ANSWER_SECONDS = 10


async def _answer(port: int, head: bytes, piece: int = 0) -> bytes:
    """Send ``head`` (all at once, or in pieces of ``piece`` bytes, each its own read on the
    server); what the server answers until it closes, or the first reply's head if it keeps
    the connection open."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def send() -> None:
        # The server may refuse and close before the whole head is sent: that ends the send.
        with contextlib.suppress(ConnectionError):
            for start in range(0, len(head), piece or len(head)):
                writer.write(head[start : start + (piece or len(head))])
                await writer.drain()
                if piece:
                    await asyncio.sleep(0.001)

    sending = asyncio.ensure_future(send())
    answer = b""
    try:
        while b"\r\n\r\n" not in answer:
            chunk = await asyncio.wait_for(reader.read(65536), ANSWER_SECONDS)
            if not chunk:
                break
            answer += chunk
    except ConnectionError:
        pass  # a reset after the answer arrived: what was read is the answer
    finally:
        sending.cancel()
        writer.close()
    return answer


def _headers(count: int, size: int = 0) -> bytes:
    return b"".join(b"X-F%d: %s\r\n" % (i, b"v" * size) for i in range(count))


async def _check_limits(port: int) -> None:
    big = b"X-Big: " + b"a" * (1 << 20) + b"\r\n"
    for head, piece in (
        (REQUEST + big + b"\r\n", 0),  # a megabyte header at once
        (REQUEST + big + b"\r\n", 16 * 1024),  # the same arriving read by read
        (REQUEST + _headers(10_000) + b"\r\n", 0),  # ten thousand small headers
        (REQUEST + _headers(MAX_REQUEST_HEADERS + 1) + b"\r\n", 0),  # one header too many
    ):
        answer = await _answer(port, head, piece)
        assert answer.startswith(b"HTTP/1.1 431"), (len(head), piece, answer[:200])

    # Within the limits: a head of 60 KB, and of nearly as many fields as allowed.
    near = MAX_REQUEST_HEAD_BYTES - 4 * 1024
    within = REQUEST + b"X-Big: " + b"a" * near + b"\r\n\r\n"
    assert (await _answer(port, within)).startswith(b"HTTP/1.1 200")
    many = REQUEST + _headers(MAX_REQUEST_HEADERS - 10, 16) + b"\r\n"
    assert (await _answer(port, many)).startswith(b"HTTP/1.1 200")


def test_a_head_past_the_limits_is_refused_with_431(tmp_path: Path, http_server: str) -> None:
    served = start_server(tmp_path / "data", server=http_server)
    try:
        served.wait_ready()
        run(_check_limits(served.http_port))
    finally:
        assert served.stop() == 0


async def _app(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers once the whole body came: how a chunked request ends is the test's to check."""
    while True:
        event = await receive()
        if event["type"] == "http.disconnect" or not event.get("more_body"):
            break
    headers = [(b"content-length", b"2")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"ok"})


def test_a_chunked_bodys_trailers_count_toward_the_head_under_uvicorn() -> None:
    # uvicorn's parser adds a chunked body's trailers to the request's headers, which ten
    # thousand of them would have grown without bound (Envoy hands the app no HTTP/1.1
    # trailers: its enable_trailers is off).
    chunked = (
        b"POST / HTTP/1.1\r\nHost: portico\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n"
    )

    async def scenario() -> None:
        async with uvicorn_serving(_app) as address:
            port = int(address.rsplit(":", 1)[1])
            few = await _answer(port, chunked + _headers(3) + b"\r\n")
            assert few.startswith(b"HTTP/1.1 200"), few
            many = await _answer(port, chunked + _headers(10_000) + b"\r\n")
            assert not many.startswith(b"HTTP/1.1 200"), many  # closed, the request unanswered

    run(scenario())
