"""Failure detection: a node whose Status stream ended and that stayed silent for the grace
period is FAILED, and its instances are rescheduled (see :mod:`app.services.kudo.nodes`).

It works from the report times stored with each node, so any leader, also a new one after a
restart, reaches the same verdicts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from app.services.kudo.nodes import fail_silent_nodes
from app.sim.clock import Clock
from app.store import ObjectStore

log = logging.getLogger(__name__)
# How often silence is checked, as a share of the grace period (a verdict is at most this late).
CHECKS_PER_GRACE = 4


def failure_detection_job(
    store: ObjectStore, grace_seconds: float, clock: Clock
) -> Callable[[], Awaitable[None]]:
    """A job declaring silent nodes FAILED."""

    async def detect_failed_nodes() -> None:
        # A new leader (or a restarted server) first gives nodes one grace period to reconnect.
        await asyncio.sleep(grace_seconds)
        while True:
            for node_id in await fail_silent_nodes(store, grace_seconds, clock):
                log.warning("node %s failed: silent for more than %s s", node_id, grace_seconds)
            await asyncio.sleep(max(grace_seconds / CHECKS_PER_GRACE, 0.005))

    return detect_failed_nodes
