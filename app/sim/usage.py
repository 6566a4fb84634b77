"""What a running container uses: a seeded, time-varying share of its limits.

Within each ``WINDOW_SECONDS`` of wall-clock time a container's usage is fixed by a hash of
(container id, window), so every reader (the scheduler's simulated nodes, ``portico
node-agent``, the instance's own status) computes the same numbers for the same moment, and
they change from window to window. Shares: cpu 10-90% of its limit, memory 40-80%, disk
20-40%, each rounded up (so at least 1, and never above the limit).
"""

from __future__ import annotations

import math

from app.sim.seeded import unit_interval

WINDOW_SECONDS = 5.0
_SHARES = {"cpu": (0.1, 0.8), "memory": (0.4, 0.4), "disk": (0.2, 0.2)}


def usage_at(
    container: str, limit: tuple[int, int, int], at_seconds: float
) -> tuple[int, int, int]:
    """(cpu, memory, disk) the container uses at ``at_seconds`` (epoch), within ``limit``."""
    window = int(at_seconds // WINDOW_SECONDS)
    used = []
    for (dimension, (base, spread)), maximum in zip(_SHARES.items(), limit, strict=True):
        share = base + spread * unit_interval("usage", container, dimension, window)
        used.append(min(maximum, math.ceil(maximum * share)) if maximum > 0 else 0)
    return used[0], used[1], used[2]
