"""What the reliability tests measure while a server is put under strain."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

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


def tree_rss_mib(root: int) -> float:
    """Resident memory (MiB) of ``root`` and every process under it: pyvoy's Envoy workers run in
    sessions of their own, so a process group would miss them."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                # The parent is the field after the state, which follows the parenthesised name.
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry.name))
    total_kib = 0
    pending = [root]
    while pending:
        pid = pending.pop()
        pending.extend(children.get(pid, ()))
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kib += int(line.split()[1])
    return total_kib / 1024
