"""Replies written in one loop turn leave together at its end, in order, and nothing held is
lost, overtaken or left unbounded (app.server.on_uvicorn.write_batches)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

from app.server.on_uvicorn.write_batches import HOLD_BYTES, HOLD_CONNECTIONS, WriteBatches
from tests.harness import run, running, uvicorn_serving


class Recorder:
    """A transport that records what reaches it."""

    def __init__(self) -> None:
        self.sent: list[list[bytes]] = []  # one entry per writelines call
        self.events: list[str] = []
        self.closing = False

    def writelines(self, lines: Any) -> None:
        self.sent.append(list(lines))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.events.append("close")
        self.closing = True

    def abort(self) -> None:
        self.events.append("abort")
        self.closing = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"


async def turn_ended() -> None:
    """Returns once the callbacks scheduled so far (the flush among them) have run."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.call_soon(done.set_result, None)
    await done


def test_a_turns_replies_leave_at_its_end_one_write_per_connection_in_order() -> None:
    async def scenario() -> None:
        batches = WriteBatches(asyncio.get_running_loop())
        first, second = Recorder(), Recorder()
        one, two = batches.wrap(first), batches.wrap(second)  # type: ignore[arg-type]
        one.write(b"HTTP/1.1 200 OK\r\n\r\n")
        two.write(b"HTTP/1.1 404 Not Found\r\n\r\n")
        one.write(b"body one")
        two.writelines([b"body ", b"two"])
        assert first.sent == [] and second.sent == []  # still this turn
        await turn_ended()
        assert first.sent == [[b"HTTP/1.1 200 OK\r\n\r\n", b"body one"]]
        assert second.sent == [[b"HTTP/1.1 404 Not Found\r\n\r\n", b"body ", b"two"]]
        one.write(b"next turn")
        await turn_ended()
        assert first.sent[-1] == [b"next turn"]
        assert one.get_extra_info("peername") == "info peername"  # the rest is the transport's

    run(scenario())


def test_closing_sends_what_is_held_first_and_aborting_drops_it() -> None:
    async def scenario() -> None:
        batches = WriteBatches(asyncio.get_running_loop())
        closed, aborted = Recorder(), Recorder()
        one, two = batches.wrap(closed), batches.wrap(aborted)  # type: ignore[arg-type]
        one.write(b"408 reply")
        one.close()
        two.write(b"never sent")
        two.abort()
        assert closed.sent == [[b"408 reply"]] and closed.events == ["close"]
        await turn_ended()
        assert aborted.sent == [] and aborted.events == ["abort"]
        assert closed.sent == [[b"408 reply"]]  # not sent twice

    run(scenario())


def test_a_large_write_reaches_the_transport_at_once_for_its_flow_control() -> None:
    async def scenario() -> None:
        batches = WriteBatches(asyncio.get_running_loop())
        recorder = Recorder()
        transport = batches.wrap(recorder)  # type: ignore[arg-type]
        transport.write(b"head")
        assert transport.get_write_buffer_size() == 4
        transport.write(b"x" * HOLD_BYTES)
        assert recorder.sent == [[b"head", b"x" * HOLD_BYTES]]
        assert transport.get_write_buffer_size() == 0
        await turn_ended()
        assert len(recorder.sent) == 1

    run(scenario())


def test_a_turn_answering_many_connections_sends_to_the_first_before_the_last_is_written() -> None:
    async def scenario() -> None:
        batches = WriteBatches(asyncio.get_running_loop())
        recorders = [Recorder() for _ in range(HOLD_CONNECTIONS * 2 + 1)]
        transports = [batches.wrap(r) for r in recorders]  # type: ignore[arg-type]
        for transport in transports[:HOLD_CONNECTIONS]:
            transport.write(b"event")
        assert all(r.sent == [] for r in recorders)  # one burst still filling
        transports[HOLD_CONNECTIONS].write(b"event")
        assert all(r.sent == [[b"event"]] for r in recorders[:HOLD_CONNECTIONS])
        for transport in transports[HOLD_CONNECTIONS + 1 :]:
            transport.write(b"event")
        await turn_ended()
        assert all(r.sent == [[b"event"]] for r in recorders)  # each once, none lost

    run(scenario())


def test_a_connection_gone_before_the_turn_ends_costs_the_others_nothing() -> None:
    async def scenario() -> None:
        batches = WriteBatches(asyncio.get_running_loop())
        gone, staying = Recorder(), Recorder()
        one, two = batches.wrap(gone), batches.wrap(staying)  # type: ignore[arg-type]
        one.write(b"for nobody")
        two.write(b"for the client")
        gone.closing = True  # the peer reset the connection meanwhile
        await turn_ended()
        assert gone.sent == []
        assert staying.sent == [[b"for the client"]]

    run(scenario())


def test_pipelined_requests_on_one_connection_are_answered_whole_and_in_order(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server, uvicorn_serving(server.portico.http_app) as at:
            host, port = at.split(":")
            requests = b"".join(
                f"GET {path} HTTP/1.1\r\nhost: x\r\n\r\n".encode()
                for path in ("/healthz", "/v1/nowhere", "/healthz")
            )
            replies = await asyncio.to_thread(_exchange, host, int(port), requests, 3)
            assert [reply.split(b"\r\n", 1)[0] for reply in replies] == [
                b"HTTP/1.1 200 OK",
                b"HTTP/1.1 404 Not Found",
                b"HTTP/1.1 200 OK",
            ]
            assert replies[0].endswith(b'{"status":"ok"}')
            assert b'"code":5' in replies[1]

    run(scenario())


def _exchange(host: str, port: int, requests: bytes, count: int) -> list[bytes]:
    """Send ``requests`` at once on one connection; the ``count`` replies (with bodies)."""
    with socket.create_connection((host, port), timeout=10) as connection:
        connection.sendall(requests)
        data = b""
        replies: list[bytes] = []
        while len(replies) < count:
            head, separator, rest = data.partition(b"\r\n\r\n")
            length = _content_length(head) if separator else None
            if length is not None and len(rest) >= length:
                replies.append(head + separator + rest[:length])
                data = rest[length:]
                continue
            chunk = connection.recv(65536)
            assert chunk, f"connection closed after {len(replies)} replies"
            data += chunk
        return replies


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return None
