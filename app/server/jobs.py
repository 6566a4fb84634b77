"""Background work: jobs that run on the leader only, restarted when they fail, and the store's
periodic housekeeping (expired revocations and idempotency keys, log compaction, log metrics).
How each is doing is kept in a :class:`~app.server.background.BackgroundWork` for ``/readyz``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from app.observe.metrics import EVENT_LOG_EVENTS, EVENT_LOG_HEAD, LEADER
from app.observe.repeats import Repeats
from app.server.background import (
    RUNNING,
    STANDBY,
    STOPPED,
    BackgroundWork,
    LoopState,
    loop_name,
)
from app.server.idempotency import StoredIdempotency
from app.store import LeaderElection, ObjectStore, Unavailable, mark_background

log = logging.getLogger("portico")
# A database outage fails every loop each time it restarts: a line per loop and interval.
_outages = Repeats(log)

# Background work: a coroutine that runs until cancelled, on the leader only.
Job = Callable[[], Awaitable[None]]


async def run_while_leader(
    store: ObjectStore,
    jobs: list[Job],
    draining: Callable[[], bool] = lambda: False,
    work: BackgroundWork | None = None,
) -> None:
    """Run ``jobs`` whenever this process is the leader; stop them when it is deposed (as when
    the database goes away: the leadership is a lock held there), and start them again once
    elected anew. Elected while ``draining()`` (on its way out), it steps aside instead: the
    leader that stopped first handed over to a worker that was stopping too, which started every
    job only to cancel them milliseconds later, and held the lock another process could have
    taken. ``work`` keeps how the election and each job are doing."""
    work = work or BackgroundWork()
    states = [work.add(job, on_leader=True) for job in jobs]
    election = work.election = LeaderElection(store)
    campaign = asyncio.create_task(election.run())
    work.campaigning = lambda: not campaign.done()
    try:
        while True:
            await election.wait_elected()
            if draining():
                log.info("elected while shutting down: leaving the background work to others")
                return
            LEADER.set(1)
            log.info("leader: starting %d background job(s)", len(jobs))
            async with asyncio.TaskGroup() as group:
                tasks = [
                    group.create_task(supervised(job, state=state))
                    for job, state in zip(jobs, states, strict=True)
                ]
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


async def supervised(job: Job, restart_delay: float = 1.0, state: LoopState | None = None) -> None:
    """Run ``job``; if it fails, log why and run it again, so one bug (or an outage of the
    database) stops nothing for longer than it lasts. The store being unavailable is one line
    (a line per interval while it lasts); anything else is a bug, with its traceback. ``state``
    keeps how it is doing. Its writes wait behind callers' (:mod:`app.store.turn_lock`)."""
    mark_background()
    state = state or LoopState(loop_name(job), on_leader=False)
    try:
        while True:
            state.becomes(RUNNING)
            try:
                await job()
            except Unavailable as exc:
                state.failed(exc.message)
                _outages.warning(
                    state.name,
                    "background job %s: %s; restarting it in %g s",
                    state.name,
                    exc.message,
                    restart_delay,
                )
            except Exception as exc:
                state.failed(str(exc) or type(exc).__name__)
                log.exception("background job %s failed; restarting it", state.name)
            else:
                state.failed("")  # a job runs until cancelled: one that returned starts again
            await asyncio.sleep(restart_delay)
    finally:
        state.becomes(STANDBY if state.on_leader else STOPPED)


def purge_expired_revocations(
    store: ObjectStore, every_seconds: float = 600.0, rate_buckets_full_after: float = 0.0
) -> Job:
    """A job that forgets revocations of tokens that have expired anyway, failed-login counts
    with nothing left to remember, and rate limit buckets idle long enough to be full again
    (``rate_buckets_full_after`` seconds, or an hour if that is longer)."""

    async def purge_expired_records() -> None:
        while True:
            removed = await store.revocations.purge_expired()
            if removed:
                log.info("forgot %d revocation(s) of expired tokens", removed)
            await store.login_attempts.forget_stale()
            await store.rate_buckets.forget_full(max(3600.0, rate_buckets_full_after))
            await asyncio.sleep(every_seconds)

    return purge_expired_records


def forget_expired_idempotency_keys(
    idempotency: StoredIdempotency, every_seconds: float = 600.0
) -> Job:
    """A job that deletes idempotency records past their retention."""

    async def forget_expired_idempotency_keys() -> None:
        while True:
            removed = await idempotency.forget_expired()
            if removed:
                log.info("forgot %d expired idempotency key(s)", removed)
            await asyncio.sleep(every_seconds)

    return forget_expired_idempotency_keys


def compact_event_log(store: ObjectStore, every_seconds: float = 3600.0) -> Job:
    """A job that drops events older than the retention (watches from before get OUT_OF_RANGE)."""

    async def compact_event_log() -> None:
        through = 0
        while True:
            now_through = await store.compact()
            if now_through != through:
                log.info("event log compacted through revision %d", now_through)
                through = now_through
            await asyncio.sleep(every_seconds)

    return compact_event_log


def sample_event_log(store: ObjectStore, every_seconds: float = 15.0) -> Job:
    """A job that keeps the event log's size and head revision in the metrics."""

    async def sample_event_log() -> None:
        while True:
            kept, head = await store.event_log_size()
            EVENT_LOG_EVENTS.set(kept)
            EVENT_LOG_HEAD.set(head)
            await asyncio.sleep(every_seconds)

    return sample_event_log
