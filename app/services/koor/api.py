"""The storage statistics API as the server runs it: a simulated Ceph cluster's numbers."""

from __future__ import annotations

import asyncio

from app.calls.access import AccessRules
from app.services.api import Api, ApiSystem, Job
from app.services.koor.service import StatsService
from app.settings.config import Settings
from app.sim.clock import SimClock
from app.store import ObjectStore


def koor_system(store: ObjectStore, settings: Settings) -> ApiSystem:
    """``stats.StatsService`` on the simulated storage cluster (made at once for the demo)."""
    stats = StatsService(store, SimClock(settings.sim_step_seconds), seed=settings.sim_seed)
    return ApiSystem(servicers=[stats], jobs=[_demo_job(stats)] if settings.demo else [])


def _demo_job(stats: StatsService) -> Job:
    """The demo's storage cluster, stored at start rather than on the first call."""

    async def seed_storage_cluster() -> None:
        await stats.storage_cluster()
        # A job that returned would be run again; the demo is seeded once per start.
        await asyncio.Event().wait()

    return seed_storage_cluster


# Every statistic is a read, whatever its RPC is called.
API = Api(
    "koor",
    koor_system,
    access=AccessRules(read_only_services=frozenset({"stats.StatsService"})),
)
