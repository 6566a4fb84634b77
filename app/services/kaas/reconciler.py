"""The cluster reconciler: moves stored clusters toward their specs, one clock step at a time.

It keeps nothing the store does not: each pass takes in what was written since the previous one
(:class:`~app.services.kaas.mirror.ClusterMirror`, a copy of the stored clusters read whole once
a term), decides what the machines and the status of each cluster with something to do should
be now (:func:`~app.services.kaas.planning.plan_cluster`, a pure function of the stored state
and the clock step), and writes the changes of each cluster in one transaction. A restart, or
another replica taking over as leader, reads the store whole and continues from it.

What a pass decides for one cluster: :mod:`app.services.kaas.planning`.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from google.protobuf import struct_pb2

from app.services.kaas.mirror import ClusterMirror
from app.services.kaas.planning import Outcome, next_change, plan_cluster
from app.services.kaas.records import (
    CLUSTER,
    CLUSTER_SPEC,
    MACHINE,
    ClusterState,
    cluster_records,
    forget_deployments,
    keep_deployments,
    key_of,
    machine_count,
    machine_data,
    reserve_machines,
)
from app.sim.clock import Clock
from app.sim.kubeconfig import issue_kubeconfig
from app.sim.machine_model import Machine
from app.sim.machines import MachineProvider
from app.store import ObjectStore, Record, Transaction
from gen.cnct.kaas.api import api_pb2

log = logging.getLogger(__name__)

# Passes are at least this far apart in wall time: with a near-zero test step, a pass per step
# would only burn CPU (machines jump over any number of steps at once).
MIN_PASS_SECONDS = 0.01

# Clusters whose changes are being written at once, each in a transaction of its own: they
# share database commits (group commit), so a pass over a thousand clusters costs a few fsyncs;
# callers' writes go first (app.store.turn_lock).
WRITES_IN_FLIGHT = 16
# After a pass, the reconciler rests at least this share of the pass's own length.
REST_SHARE = 0.5
# Planning runs on the event loop in slices this long, requests in between. While they have work
# (a turn of theirs takes this long, or a caller's write waits for its turn), planning takes at
# most BUSY_SHARE of the loop.
SLICE_SECONDS = 0.002
BUSY_SECONDS = 0.001
BUSY_SHARE = 0.1
T = TypeVar("T")


Seen = tuple[int, int, frozenset[tuple[str, int]]]  # status, spec and machine revisions


@dataclass(frozen=True)
class _Planned:
    """One cluster's changes, planned from a snapshot of the store taken at ``seen``."""

    state: ClusterState
    outcome: Outcome
    forms: list[struct_pb2.Struct]  # the stored form of each of ``outcome.machines``
    seen: Seen


class ClusterReconciler:
    """The leader-only job that drives every stored cluster toward its spec.

    A pass takes in what was written since the previous one (:class:`ClusterMirror`), plans
    the clusters that may have something to do on the loop in short slices, then writes each
    changed cluster in its own transaction, ``WRITES_IN_FLIGHT`` at a time. A cluster written
    by someone else since the snapshot (a user's scale, delete or upgrade) is left to the next
    pass, which plans it from what was written.

    Which clusters a pass plans: those written since the previous pass, and those due. A
    cluster planned with nothing to change is due again when one of its machines next moves by
    itself (a phase ends, a failed deployment's retry comes); one waiting for addresses is due
    every pass; a running cluster nothing is written to is never due. So a pass costs what
    changed and what is in progress, not every cluster stored.
    """

    def __init__(self, store: ObjectStore, provider: MachineProvider, clock: Clock) -> None:
        self.store = store
        self.provider = provider
        self.clock = clock
        self._steps_per_pass = max(1, math.ceil(MIN_PASS_SECONDS / clock.step_seconds))
        self._forget()

    def _forget(self) -> None:
        """Start from the store alone, as a new leader does."""
        self._mirror = ClusterMirror(self.store)
        # The step each cluster is to be planned again at, and the same as a heap of
        # (step, name) whose entries that no longer match ``_due`` are stale.
        self._due: dict[str, int] = {}
        self._wakeups: list[tuple[int, str]] = []

    async def run(self) -> None:
        """Reconcile on every pass until cancelled."""
        self._forget()  # another leader may have written anything since a previous term
        while True:
            started = time.monotonic()
            await self.reconcile_all()
            # However far behind, the next pass waits a share of this one's length: requests
            # keep most of the process while a backlog is worked through.
            rest = asyncio.sleep((time.monotonic() - started) * REST_SHARE)
            await asyncio.gather(rest, self.clock.sleep_steps(self._steps_per_pass))

    async def reconcile_all(self) -> int:
        """One pass; returns how many clusters changed."""
        now = self.clock.now()
        names = await self._mirror.catch_up() | self._take_due(now)
        planned = await _in_slices(
            self._plan_pass(names, now), lambda: self.store.database.callers_waiting
        )
        limit = asyncio.Semaphore(WRITES_IN_FLIGHT)

        async def write(plan: _Planned) -> bool:
            async with limit:
                return await self._write(plan)

        written = await asyncio.gather(*(write(plan) for plan in planned), return_exceptions=True)
        for plan, result in zip(planned, written, strict=True):
            if isinstance(result, BaseException):
                log.error("cluster %s: writing its changes failed: %s", plan.state.name, result)
        return sum(result is True for result in written)

    def _take_due(self, now: int) -> set[str]:
        due: set[str] = set()
        while self._wakeups and self._wakeups[0][0] <= now:
            step, name = heapq.heappop(self._wakeups)
            if self._due.get(name) == step:
                del self._due[name]
                due.add(name)
        return due

    def _plan_again(self, name: str, step: int | None) -> None:
        """Plan ``name`` again at ``step`` (None: once something of it is written)."""
        if step is None:
            self._due.pop(name, None)
        elif self._due.get(name) != step:
            self._due[name] = step
            heapq.heappush(self._wakeups, (step, name))

    def _plan_pass(self, names: set[str], now: int) -> Iterator[_Planned | None]:
        """The changes of the clusters ``names`` at step ``now``, one cluster (or machine
        decoded) at a time."""
        yield from self._mirror.decode_written()
        in_use = self._mirror.addresses_in_use()
        for name in sorted(names):
            status, spec = self._mirror.status(name), self._mirror.spec(name)
            if status is None or spec is None:
                self._plan_again(name, None)  # its other half's write will touch it
                yield None
                continue
            own = self._mirror.machine_records(name)
            seen = (status.revision, spec.revision, frozenset((r.key, r.revision) for r in own))
            state = ClusterState(
                spec.parse(api_pb2.CreateClusterMsg),
                status.parse(api_pb2.ClusterDetailItem),
                tuple(self._mirror.machine(r) for r in own),
                self._mirror.deployments(name),
            )
            outcome = plan_cluster(state, self.provider, now, in_use)
            if not outcome.changes and outcome.status == state.status:
                self._plan_again(name, next_change(state, outcome, self.provider, now))
                yield None  # nothing to write
                continue
            # Again next pass even if the write is skipped or fails (a write touches it anyway).
            self._plan_again(name, now)
            # Addresses freed during a pass are handed out again from the next one: a cluster
            # whose write is skipped (changed meanwhile) may still hold them.
            in_use.update(m.ip for m in outcome.machines if m.holds_ip)
            if outcome.kubeconfig_server_ip:
                # Issued once and stored: the CA key and token are random, never re-rendered.
                outcome.status.kubeconfig = issue_kubeconfig(
                    name, outcome.kubeconfig_server_ip, now=self.clock.time_of(now)
                )
            forms = [machine_data(m) for m in outcome.machines]
            yield _Planned(state, outcome, forms, seen)

    async def _write(self, plan: _Planned) -> bool:
        """Write one cluster's planned changes if it is as planned from; whether it was."""
        state, outcome, name = plan.state, plan.outcome, plan.state.name
        written: list[tuple[Record, Machine]] = []
        async with self.store.transaction() as tx:
            if await _revisions(tx, name) != plan.seen:
                return False  # written meanwhile: the next pass plans it again
            for machine in outcome.released:
                await tx.delete(MACHINE, key_of(machine))
                if state.status.status != api_pb2.STOPPING:
                    await keep_deployments(tx, machine)
            stored = {(m.pool, m.index) for m in state.machines}
            for machine, form in zip(outcome.machines, plan.forms, strict=True):
                if (machine.pool, machine.index) in stored:
                    record = await tx.update(MACHINE, key_of(machine), form)
                else:
                    record = await tx.create(MACHINE, key_of(machine), form)
                written.append((record, machine))
            if outcome.gone:
                await forget_deployments(tx, name)
                await tx.delete(CLUSTER, name)
                await tx.delete(CLUSTER_SPEC, name)
                await reserve_machines(tx, -machine_count(state.spec))
                log.info("cluster %s deleted: every machine released", name)
                return True
            if outcome.status.status != state.status.status:
                log.info(
                    "cluster %s: %s -> %s",
                    name,
                    api_pb2.ClusterStatus.Name(state.status.status),
                    api_pb2.ClusterStatus.Name(outcome.status.status),
                )
            await tx.update(CLUSTER, name, outcome.status)
        # Committed: the machines need not be decoded again from their events.
        for record, machine in written:
            self._mirror.remember(record, machine)
        return True


async def _revisions(tx: Transaction, name: str) -> Seen | None:
    """The revisions of the cluster's status, spec and machines, as ``_Planned.seen`` holds them."""
    found = await cluster_records(tx, name)
    if found is None:
        return None
    status, spec, machines = found
    return status.revision, spec.revision, frozenset((r.key, r.revision) for r in machines)


async def _in_slices(steps: Iterator[T | None], callers_waiting: Callable[[], bool]) -> list[T]:
    """Run ``steps`` on the loop, letting other callers in every ``SLICE_SECONDS``: planning a
    thousand clusters takes a while, and on a worker thread it held the interpreter lock
    against the loop at every statement the loop ran (each waited out the switch interval).

    A busy server's callers keep most of the loop (a thousand new clusters planned at once
    took half of it from a storm of creates, and p99 latency went from 0.1 to 0.6 s): when
    their turn between two slices shows they have work (a read now and then takes less than
    BUSY_SECONDS), or ``callers_waiting()`` says their writes are queued, planning rests so
    that it takes at most BUSY_SHARE of the loop. The queue must be asked: while its head
    commits on a thread the loop has little to do, and a storm of creates advanced by one
    turn between two slices, which looked like a read now and then (planning took a third of
    the loop, and creates ran at half the rate they reached without it)."""
    results: list[T] = []
    turn = time.monotonic()
    for step in steps:
        if step is not None:
            results.append(step)
        now = time.monotonic()
        if now - turn >= SLICE_SECONDS:
            await asyncio.sleep(0)
            others = time.monotonic() - now
            if others >= BUSY_SECONDS or callers_waiting():
                own = now - turn
                await asyncio.sleep(max(0.0, own / BUSY_SHARE - own - others))
            turn = time.monotonic()
    return results
