"""Many SSE subscribers of ListenEvents, and the latency of each event they receive.

Run as ``python -m tests.bench.sse_load HOST PORT TOKEN SUBSCRIBERS SECONDS``. It opens the
subscriptions (plain sockets, so the client is not the bottleneck), reads every event until
told to stop, and prints one JSON object: time to first byte of each subscription and, for each
event, the moment it arrived, keyed by pod id and event type. The producer (the benchmark)
matches those with the moments it made the changes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

PATH = "/v1/runtime/events"


async def subscribe(
    host: str, port: int, token: str, arrivals: list[tuple[str, str, float]]
) -> float:
    """One subscription; returns its time to first byte and appends (id, type, time) arrivals."""
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 20)
    writer.write(
        (
            f"GET {PATH} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n"
            f"Authorization: Bearer {token}\r\n\r\n"
        ).encode()
    )
    await writer.drain()
    first = await reader.readline()
    ttfb = time.perf_counter() - started
    if b" 200 " not in first:
        raise RuntimeError(f"subscription refused: {first!r}")
    try:
        while line := await reader.readline():
            if line.startswith(b"data: "):
                now = time.time()
                # Chunked transfer puts chunk sizes on lines of their own; only data lines count.
                reply = json.loads(line[6:])["result"]
                for event in reply.get("events", ()):
                    arrivals.append((event["id"], event["type"], now))
    except (asyncio.CancelledError, ConnectionError):
        pass
    finally:
        writer.close()
    return ttfb


async def main(host: str, port: int, token: str, subscribers: int, seconds: float) -> None:
    arrivals: list[tuple[str, str, float]] = []
    tasks = [
        asyncio.create_task(subscribe(host, port, token, arrivals)) for _ in range(subscribers)
    ]
    await asyncio.sleep(seconds)
    for task in tasks:
        task.cancel()
    ttfbs = []
    for task in tasks:
        try:
            ttfbs.append(await task)
        except asyncio.CancelledError:
            continue
    print(json.dumps({"ttfb_s": ttfbs, "arrivals": arrivals}))


if __name__ == "__main__":
    host, port, token, subscribers, seconds = sys.argv[1:6]
    asyncio.run(main(host, int(port), token, int(subscribers), float(seconds)))
