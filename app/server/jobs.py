"""Background work: jobs that run on the leader only, restarted when they fail, and the store's
periodic housekeeping (expired revocations and idempotency keys, log compaction, log metrics)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from app.observe.metrics import EVENT_LOG_EVENTS, EVENT_LOG_HEAD, LEADER
from app.server.idempotency import StoredIdempotency
from app.store import LeaderElection, ObjectStore, mark_background

log = logging.getLogger("portico")

# Background work: a coroutine that runs until cancelled, on the leader only.
Job = Callable[[], Awaitable[None]]


async def run_while_leader(
    store: ObjectStore, jobs: list[Job], draining: Callable[[], bool] = lambda: False
) -> None:
    """Run ``jobs`` whenever this process is the leader; stop them when it is deposed. Elected
    while ``draining()`` (on its way out), it steps aside instead: the leader that stopped first
    handed over to a worker that was stopping too, which started every job only to cancel them
    milliseconds later, and held the lock another process could have taken."""
    election = LeaderElection(store)
    campaign = asyncio.create_task(election.run())
    try:
        while True:
            await election.wait_elected()
            if draining():
                log.info("elected while shutting down: leaving the background work to others")
                return
            LEADER.set(1)
            log.info("leader: starting %d background job(s)", len(jobs))
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(supervised(job)) for job in jobs]
                await election.wait_deposed()
                LEADER.set(0)
                log.warning("no longer the leader: stopping background work")
                for task in tasks:
                    task.cancel()
    finally:
        LEADER.set(0)
        campaign.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await campaign


async def supervised(job: Job, restart_delay: float = 1.0) -> None:
    """Run ``job``; if it fails, log the traceback and run it again, so one bug stops nothing.
    Its writes wait behind callers' (:mod:`app.store.turn_lock`)."""
    mark_background()
    while True:
        try:
            await job()
        except Exception:
            log.exception("background job %s failed; restarting it", getattr(job, "__name__", job))
        await asyncio.sleep(restart_delay)


def purge_expired_revocations(
    store: ObjectStore, every_seconds: float = 600.0, rate_buckets_full_after: float = 0.0
) -> Job:
    """A job that forgets revocations of tokens that have expired anyway, failed-login counts
    with nothing left to remember, and rate limit buckets idle long enough to be full again
    (``rate_buckets_full_after`` seconds, or an hour if that is longer)."""

    async def purge() -> None:
        while True:
            removed = await store.revocations.purge_expired()
            if removed:
                log.info("forgot %d revocation(s) of expired tokens", removed)
            await store.login_attempts.forget_stale()
            await store.rate_buckets.forget_full(max(3600.0, rate_buckets_full_after))
            await asyncio.sleep(every_seconds)

    return purge


def forget_expired_idempotency_keys(
    idempotency: StoredIdempotency, every_seconds: float = 600.0
) -> Job:
    """A job that deletes idempotency records past their retention."""

    async def forget() -> None:
        while True:
            removed = await idempotency.forget_expired()
            if removed:
                log.info("forgot %d expired idempotency key(s)", removed)
            await asyncio.sleep(every_seconds)

    return forget


def compact_event_log(store: ObjectStore, every_seconds: float = 3600.0) -> Job:
    """A job that drops events older than the retention (watches from before get OUT_OF_RANGE)."""

    async def compact() -> None:
        through = 0
        while True:
            now_through = await store.compact()
            if now_through != through:
                log.info("event log compacted through revision %d", now_through)
                through = now_through
            await asyncio.sleep(every_seconds)

    return compact


def sample_event_log(store: ObjectStore, every_seconds: float = 15.0) -> Job:
    """A job that keeps the event log's size and head revision in the metrics."""

    async def sample() -> None:
        while True:
            kept, head = await store.event_log_size()
            EVENT_LOG_EVENTS.set(kept)
            EVENT_LOG_HEAD.set(head)
            await asyncio.sleep(every_seconds)

    return sample
