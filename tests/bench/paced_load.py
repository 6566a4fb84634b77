"""An open-loop HTTP load generator: GETs sent at a fixed rate, each one's latency recorded.

Requests leave on schedule whether or not earlier ones answered, so a server that stalls shows
the stall in the latency of every request that waited on it (no coordinated omission). It counts
the requests due, answered and failed, and the rate actually reached.
"""

from __future__ import annotations

import asyncio
import time

import httpx


def percentile_ms(sorted_seconds: list[float], q: float) -> float:
    """The ``q`` quantile of sorted latencies in seconds, in milliseconds (NaN if none)."""
    if not sorted_seconds:
        return float("nan")
    return sorted_seconds[min(len(sorted_seconds) - 1, int(len(sorted_seconds) * q))] * 1000


async def paced_gets(
    client: httpx.AsyncClient, url: str, rate: float, stop: asyncio.Event
) -> dict[str, float]:
    """GET ``url`` ``rate`` times a second until ``stop`` is set."""
    latencies: list[float] = []
    errors = 0

    async def one(due: float) -> None:
        nonlocal errors
        try:
            reply = await client.get(url)
        except httpx.HTTPError:
            errors += 1
            return
        if reply.status_code != 200:
            errors += 1
            return
        # From when it was due to leave, not when the generator got round to sending it.
        latencies.append(time.perf_counter() - due)

    started = time.perf_counter()
    tasks: list[asyncio.Task[None]] = []
    while not stop.is_set():
        due = started + len(tasks) / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        tasks.append(asyncio.create_task(one(due)))
    elapsed = time.perf_counter() - started
    await asyncio.gather(*tasks)
    latencies.sort()
    return {
        "expected": len(tasks),
        "delivered": len(latencies),
        "errors": errors,
        "rate": rate,
        "rate_reached": len(latencies) / elapsed if elapsed else 0.0,
        "p50_ms": percentile_ms(latencies, 0.5),
        "p99_ms": percentile_ms(latencies, 0.99),
        "max_ms": percentile_ms(latencies, 1.0),
    }
