"""Many SSE subscribers of ListenEvents, and every event each of them receives.

Run as ``python -m tests.bench.sse_load HOST PORT TOKEN SUBSCRIBERS``. It opens the
subscriptions (plain sockets, so the client is not the bottleneck) and, once every one has its
status line, prints ``{"open": N, "refused": [...]}`` on a line of its own. It then reads every
event until a line arrives on its standard input, and prints one JSON object: the time to first
byte of each subscription, the refusals, and for each subscriber the events it got as
``[pod id, event type, arrival time, revision]`` (the revision is the SSE ``id:`` of the message
that carried the event). The producer (the benchmark) matches those with the changes it made.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import uvloop

from tests.bench.procs import frozen_heap

PATH = "/v1/runtime/events"
OPEN_TIMEOUT = 30.0

Arrival = tuple[str, str, float, int]
Received = tuple[float, int, bytes]  # when, the message's revision, its ``data:`` line


async def subscribe(
    host: str, port: int, token: str, opened: asyncio.Future[float], received: list[Received]
) -> None:
    """One subscription: ``opened`` gets its time to first byte (or its refusal), ``received``
    every message it receives until cancelled (see :func:`arrivals`)."""
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 20)
    try:
        writer.write(
            (
                f"GET {PATH} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n"
                f"Authorization: Bearer {token}\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        first = await reader.readline()
        if b" 200 " not in first:
            opened.set_exception(RuntimeError(f"subscription refused: {first[:80]!r}"))
            return
        opened.set_result(time.perf_counter() - started)
        revision = 0
        pending = b""
        while chunk := await reader.read(1 << 16):
            # An event arrived when its bytes were read, not when this process got to parsing
            # them: messages are parsed once the run is over, so that a burst of large ones to a
            # thousand subscribers does not hold back the reading (and timing) of what follows.
            now = time.time()
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                # Chunked transfer puts chunk sizes on lines of their own; only SSE fields count.
                if line.startswith(b"id: "):
                    revision = int(line[4:])
                elif line.startswith(b"data: "):
                    received.append((now, revision, line))
    except (ConnectionError, OSError) as error:
        if not opened.done():
            opened.set_exception(error)
    finally:
        writer.close()


def arrivals(received: list[Received]) -> list[Arrival]:
    """The events of one subscriber's messages, each with when and in which revision it came."""
    return [
        (event["id"], event["type"], now, revision)
        for now, revision, line in received
        for event in json.loads(line[6:]).get("result", {}).get("events", ())
    ]


async def main(host: str, port: int, token: str, subscribers: int) -> None:
    received: list[list[Received]] = [[] for _ in range(subscribers)]
    opened = [asyncio.get_running_loop().create_future() for _ in range(subscribers)]
    tasks = [
        asyncio.create_task(subscribe(host, port, token, opened[i], received[i]))
        for i in range(subscribers)
    ]
    done, _ = await asyncio.wait(opened, timeout=OPEN_TIMEOUT)
    ttfb = [f.result() for f in done if f.exception() is None]
    refused = [str(f.exception()) for f in done if f.exception() is not None]
    refused += ["no status line in time"] * (subscribers - len(done))
    print(json.dumps({"open": len(ttfb), "refused": refused}), flush=True)
    # What the opening built lives until the end: a full collection of it would pause this
    # process for tens of ms in the middle of an event's delivery, timed as the server's.
    with frozen_heap():
        await asyncio.to_thread(sys.stdin.readline)  # the producer's changes are over
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    every = [arrivals(messages) for messages in received]
    print(json.dumps({"ttfb_s": ttfb, "refused": refused, "arrivals": every}))


if __name__ == "__main__":
    host, port, token, subscribers = sys.argv[1:5]
    # uvloop, as the server: the client's own loop is not what is measured.
    uvloop.run(main(host, int(port), token, int(subscribers)))
