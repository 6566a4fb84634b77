"""What the reliability tests measure while a server is put under strain."""

from __future__ import annotations

import asyncio
import time

import httpx


async def version_reply_times(
    http: httpx.AsyncClient, headers: dict[str, str], until: asyncio.Event
) -> list[float]:
    """Call GET /api/v1/version back to back until ``until`` is set; each answer's time, sorted."""
    times = []
    while not until.is_set():
        started = time.perf_counter()
        reply = await http.get("/api/v1/version", headers=headers)
        assert reply.status_code == 200
        times.append(time.perf_counter() - started)
        await asyncio.sleep(0.005)
    return sorted(times)
