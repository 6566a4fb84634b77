"""The cluster reconciler on a manual clock: lifecycle, upgrades, failures, restarts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from app.services.kaas import reconciler as reconciler_module
from app.services.kaas.planning import MAX_DEPLOY_RETRIES
from app.services.kaas.reconciler import ClusterReconciler
from app.services.kaas.records import CLUSTER, CLUSTER_SPEC, MACHINE, ClusterState, load_cluster
from app.sim.clock import ManualClock
from app.sim.machine_model import Phase, system_id_for
from app.sim.machines import FaultInjection, IpPool, MachineTimings, SimulatedMachineProvider
from app.store import ObjectStore
from gen.cnct.kaas.api import api_pb2
from tests.harness import run

PROVIDER = SimulatedMachineProvider(timings=MachineTimings(deploy_jitter_steps=0))
# allocate 1 + deploy 3 + join 2 steps
DEPLOYED_AFTER = 6


def _spec(
    name: str = "prod", version: str = "1.31.2", workers: int = 2
) -> api_pb2.CreateClusterMsg:
    return api_pb2.CreateClusterMsg(
        name=name,
        k8s_version=version,
        control_plane_nodes=api_pb2.ControlPlaneMachineSpec(count=1, instanceType="standard"),
        worker_node_pools=[
            api_pb2.MachineSpec(name="workers", instanceType="standard", count=workers)
        ],
    )


async def _create(store: ObjectStore, spec: api_pb2.CreateClusterMsg) -> None:
    async with store.transaction() as tx:
        await tx.create(CLUSTER_SPEC, spec.name, spec)
        await tx.create(
            CLUSTER,
            spec.name,
            api_pb2.ClusterDetailItem(name=spec.name, status=api_pb2.PROVISIONING),
        )


def _with_store(tmp_path: Path, scenario: Callable[[ObjectStore], Awaitable[None]]) -> None:
    async def main() -> None:
        async with ObjectStore.open(f"sqlite:///{tmp_path / 'kaas.db'}") as store:
            await scenario(store)

    run(main())


def _planned(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """(cluster, step) of every cluster the reconciler plans from now on."""
    planned: list[tuple[str, int]] = []
    real = reconciler_module.plan_cluster

    def counting(state: ClusterState, provider: Any, now: int, in_use: Any) -> Any:
        planned.append((state.name, now))
        return real(state, provider, now, in_use)

    monkeypatch.setattr(reconciler_module, "plan_cluster", counting)
    return planned


async def _steps(reconciler: ClusterReconciler, clock: ManualClock, n: int) -> None:
    for _ in range(n):
        clock.advance()
        await reconciler.reconcile_all()


def test_a_new_cluster_is_provisioned_then_running_with_a_kubeconfig(tmp_path):
    async def scenario(store: ObjectStore) -> None:
        clock = ManualClock()
        reconciler = ClusterReconciler(store, PROVIDER, clock)
        await _create(store, _spec())
        await reconciler.reconcile_all()
        state = await load_cluster(store, "prod")
        assert state is not None
        assert state.status.status == api_pb2.PROVISIONING
        assert [m.phase for m in state.machines] == [Phase.ALLOCATED] * 3
        assert state.status.kubeconfig == ""
        await _steps(reconciler, clock, DEPLOYED_AFTER - 1)
        assert (await load_cluster(store, "prod")).status.status == api_pb2.PROVISIONING
        await _steps(reconciler, clock, 1)
        state = await load_cluster(store, "prod")
        assert state.status.status == api_pb2.RUNNING
        config = yaml.safe_load(state.status.kubeconfig)
        assert config["clusters"][0]["name"] == "prod"
        plane = next(m for m in state.machines if m.pool == "control-plane")
        assert config["clusters"][0]["cluster"]["server"] == f"https://{plane.ip}:6443"
        # Issued once: later passes leave it alone.
        await _steps(reconciler, clock, 3)
        assert (await load_cluster(store, "prod")).status.kubeconfig == state.status.kubeconfig

    _with_store(tmp_path, scenario)


def test_an_upgrade_replaces_versions_one_machine_at_a_time(tmp_path):
    async def scenario(store: ObjectStore) -> None:
        clock = ManualClock()
        reconciler = ClusterReconciler(store, PROVIDER, clock)
        await _create(store, _spec(workers=3))
        await _steps(reconciler, clock, DEPLOYED_AFTER + 1)
        async with store.transaction() as tx:
            await tx.update(CLUSTER_SPEC, "prod", _spec(version="1.32.0", workers=3))
            status = api_pb2.ClusterDetailItem(name="prod", status=api_pb2.RECONCILING)
            status.kubeconfig = (await load_cluster(tx, "prod")).status.kubeconfig
            await tx.update(CLUSTER, "prod", status)
        upgraded_order = []
        for _ in range(40):
            await _steps(reconciler, clock, 1)
            state = await load_cluster(store, "prod")
            upgrading = [m for m in state.machines if m.phase is Phase.UPGRADING]
            assert len(upgrading) <= 1
            for m in state.machines:
                if m.k8s_version == "1.32.0" and m.hostname not in upgraded_order:
                    upgraded_order.append(m.hostname)
            if state.status.status == api_pb2.RUNNING:
                break
            assert state.status.status == api_pb2.RECONCILING
        assert state.status.status == api_pb2.RUNNING
        assert {m.k8s_version for m in state.machines} == {"1.32.0"}
        # The control plane goes first, as kubeadm upgrades do.
        assert upgraded_order[0] == "prod-control-plane-0"
        assert len(upgraded_order) == 4

    _with_store(tmp_path, scenario)


def test_a_failed_worker_degrades_the_cluster_and_a_failed_control_plane_breaks_it(tmp_path):
    faults = FaultInjection(failure_ratio=0.5, seed=3)
    every = range(MAX_DEPLOY_RETRIES + 1)

    # Names whose machines fail exactly as wanted (the fault injection is a pure function):
    # the failing ones fail their first deployment and every retry.
    def fails(name: str, pool: str, i: int, attempts: range = range(1)) -> bool:
        return all(faults.fails(system_id_for(name, pool, i), a) for a in attempts)

    names = [f"c{i}" for i in range(2000)]
    degraded = next(
        n
        for n in names
        if not fails(n, "control-plane", 0)
        and fails(n, "workers", 0, every)
        and not fails(n, "workers", 1)
    )
    broken = next(n for n in names if fails(n, "control-plane", 0, every))
    provider = SimulatedMachineProvider(faults=faults, timings=PROVIDER.timings)

    async def scenario(store: ObjectStore) -> None:
        clock = ManualClock()
        reconciler = ClusterReconciler(store, provider, clock)
        await _create(store, _spec(degraded))
        await _create(store, _spec(broken))
        for _ in range(DEPLOYED_AFTER + 1):  # until the first failure shows
            await _steps(reconciler, clock, 1)
            state = await load_cluster(store, degraded)
            if state.status.status == api_pb2.DEGRADED:
                break
        assert state.status.status == api_pb2.DEGRADED
        assert f"{degraded}-workers-0" in state.status.status_message
        assert "simulated fault" in state.status.status_message
        assert f"retry 1 of {MAX_DEPLOY_RETRIES} after 2 step(s)" in state.status.status_message
        assert (await load_cluster(store, broken)).status.status == api_pb2.ERROR
        # Every retry fails too: after the backoffs the reconciler gives up, and says so.
        await _steps(reconciler, clock, 60)
        state = await load_cluster(store, degraded)
        assert state.status.status == api_pb2.DEGRADED
        assert "gave up after 3 retries" in state.status.status_message
        [failed] = [m for m in state.machines if m.is_failed]
        assert (failed.attempt, failed.retries) == (MAX_DEPLOY_RETRIES, MAX_DEPLOY_RETRIES)
        assert (await load_cluster(store, broken)).status.status == api_pb2.ERROR

    _with_store(tmp_path, scenario)


def test_stopping_releases_every_machine_then_forgets_the_cluster(tmp_path):
    async def scenario(store: ObjectStore) -> None:
        clock = ManualClock()
        reconciler = ClusterReconciler(store, PROVIDER, clock)
        await _create(store, _spec())
        await _steps(reconciler, clock, 2)
        await store.update(
            CLUSTER, "prod", api_pb2.ClusterDetailItem(name="prod", status=api_pb2.STOPPING)
        )
        await reconciler.reconcile_all()
        state = await load_cluster(store, "prod")
        assert {m.phase for m in state.machines} == {Phase.RELEASING}
        await _steps(reconciler, clock, 2)
        assert await load_cluster(store, "prod") is None
        assert await store.list(MACHINE) == []
        assert await store.get(CLUSTER_SPEC, "prod") is None

    _with_store(tmp_path, scenario)


def test_a_new_reconciler_resumes_from_the_store_even_after_a_long_pause(tmp_path):
    async def scenario(store: ObjectStore) -> None:
        await _create(store, _spec())
        first = ClusterReconciler(store, PROVIDER, ManualClock(start=100))
        await first.reconcile_all()  # machines allocated at step 100
        # Another process (a restart, a new leader) with a clock far ahead.
        second = ClusterReconciler(store, PROVIDER, ManualClock(start=500))
        assert await second.reconcile_all() == 1
        state = await load_cluster(store, "prod")
        assert state.status.status == api_pb2.RUNNING
        assert {m.phase for m in state.machines} == {Phase.READY}
        assert await second.reconcile_all() == 0  # settled: nothing left to write

    _with_store(tmp_path, scenario)


def test_ip_addresses_are_unique_across_clusters_and_exhaustion_waits(tmp_path):
    provider = SimulatedMachineProvider(ip_pool=IpPool("10.9.0.0/29"), timings=PROVIDER.timings)

    async def scenario(store: ObjectStore) -> None:
        clock = ManualClock()
        reconciler = ClusterReconciler(store, provider, clock)
        await _create(store, _spec("a"))
        await _create(store, _spec("b"))
        await _steps(reconciler, clock, DEPLOYED_AFTER + 1)
        a = await load_cluster(store, "a")
        b = await load_cluster(store, "b")
        assert a.status.status == api_pb2.RUNNING
        # 5 addresses: b gets none of its 3 and waits, saying why.
        assert b.status.status == api_pb2.PROVISIONING
        assert "waiting for machine addresses" in b.status.status_message
        await store.update(
            CLUSTER, "a", api_pb2.ClusterDetailItem(name="a", status=api_pb2.STOPPING)
        )
        await _steps(reconciler, clock, DEPLOYED_AFTER + 4)
        b = await load_cluster(store, "b")
        assert b.status.status == api_pb2.RUNNING
        assert len({m.ip for m in b.machines}) == 3

    _with_store(tmp_path, scenario)


def test_a_pass_plans_the_clusters_written_to_and_those_with_a_machine_due(tmp_path, monkeypatch):
    planned = _planned(monkeypatch)

    async def scenario(store: ObjectStore) -> None:
        clock = ManualClock()
        reconciler = ClusterReconciler(store, PROVIDER, clock)
        for name in ("a", "b"):
            await _create(store, _spec(name))
        await _steps(reconciler, clock, DEPLOYED_AFTER + 2)  # RUNNING, and that write read
        assert {(await load_cluster(store, n)).status.status for n in "ab"} == {api_pb2.RUNNING}
        # Running and not written to: a pass has nothing to plan, however many are stored.
        planned.clear()
        await _steps(reconciler, clock, 5)
        assert planned == []
        # A user scales b: b alone is planned, on each step a machine moves and the step after
        # (its own write), not while its new machine deploys (steps 2 to 4).
        await store.update(CLUSTER_SPEC, "b", _spec("b", workers=3))
        start = clock.now() + 1
        await _steps(reconciler, clock, DEPLOYED_AFTER + 4)
        assert {name for name, _ in planned} == {"b"}
        assert [now - start for _, now in planned] == [0, 1, 2, 4, 5, 6, 7]
        assert (await load_cluster(store, "b")).status.status == api_pb2.RUNNING

    _with_store(tmp_path, scenario)


def test_a_log_compacted_past_the_last_pass_makes_the_next_read_the_store_again(tmp_path):
    async def scenario(store: ObjectStore) -> None:
        clock = ManualClock()
        reconciler = ClusterReconciler(store, PROVIDER, clock)
        await _create(store, _spec())
        await _steps(reconciler, clock, DEPLOYED_AFTER + 1)
        # Scaled, and that write's event compacted away before the reconciler read it.
        await store.update(CLUSTER_SPEC, "prod", _spec(workers=3))
        store.compaction_age = timedelta(0)
        await store.compact()
        await _steps(reconciler, clock, DEPLOYED_AFTER + 2)
        state = await load_cluster(store, "prod")
        assert state.status.status == api_pb2.RUNNING
        assert len(state.machines) == 4

    _with_store(tmp_path, scenario)


class _PlanningClock:
    """The planner's ``time.monotonic``: it moves only while planning steps run, as when the
    callers between two slices are all queued behind a commit on a thread."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


@pytest.mark.parametrize("callers_waiting", [True, False])
def test_planning_rests_while_callers_writes_wait_for_their_turn(monkeypatch, callers_waiting):
    clock = _PlanningClock()
    rests: list[float] = []

    async def sleep(seconds: float) -> None:
        if seconds:
            rests.append(seconds)
        await asyncio.sleep(0)

    monkeypatch.setattr(reconciler_module, "time", clock)
    monkeypatch.setattr(reconciler_module, "asyncio", SimpleNamespace(sleep=sleep))

    def steps() -> Iterator[int]:
        for step in range(20):
            clock.now += 0.001  # a millisecond of planning
            yield step

    planned = run(reconciler_module._in_slices(steps(), lambda: callers_waiting))
    assert planned == list(range(20))
    if callers_waiting:
        # Callers' writes queued: planning takes at most its share of the loop, though the
        # callers' turns between slices took no time.
        planning = clock.now
        assert planning / (planning + sum(rests)) <= reconciler_module.BUSY_SHARE + 1e-9
    else:
        assert rests == []  # an idle server plans flat out
