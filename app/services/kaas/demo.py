"""``portico serve --demo``: a few clusters in different states, so a newcomer sees data at once.

Seeded once per database (a marker object, ``kaas.demo``/``seeded``, records it), so deleting a
demo cluster and restarting does not bring it back. The clusters are ordinary stored clusters
that the reconciler then drives:

- ``demo-running``: machines deployed long ago; RUNNING with a kubeconfig on the first pass.
- ``demo-provisioning``: just created; PROVISIONING for a few clock steps, then RUNNING.
- ``demo-degraded``: one worker is marked to fail its deployment (the same flag the
  ``sim_failure_ratio`` fault injection sets) with its automatic retries used up, so it ends
  DEGRADED with a status message; scaling its pool repairs it.
- ``demo-upgrading``: RUNNING on an older version, being upgraded one machine at a time
  (only when the supported versions allow an upgrade).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from app.services.kaas.planning import MAX_DEPLOY_RETRIES
from app.services.kaas.records import (
    CLUSTER,
    CLUSTER_SPEC,
    CONTROL_PLANE_POOL,
    MACHINE,
    desired_machines,
    key_of,
    load_all_machines,
    machine_count,
    machine_data,
    reserve_machines,
)
from app.services.kaas.versions import parse_version, upgrade_targets
from app.sim.clock import Clock
from app.sim.kubeconfig import issue_kubeconfig
from app.sim.machine_model import Machine, Role
from app.sim.machines import MachineProvider
from app.store import ObjectStore, Transaction
from gen.cnct.kaas.api import api_pb2

log = logging.getLogger(__name__)

DEMO_MARKER = ("kaas.demo", "seeded")
# Far enough back that every phase of a deployment has passed.
_LONG_AGO_STEPS = 1000


def _spec(name: str, version: str, planes: int, *pools: tuple[str, str, int]):
    return api_pb2.CreateClusterMsg(
        name=name,
        k8s_version=version,
        control_plane_nodes=api_pb2.ControlPlaneMachineSpec(count=planes, instanceType="standard"),
        worker_node_pools=[
            api_pb2.MachineSpec(
                name=pool,
                instanceType=kind,
                count=count,
                labels=[api_pb2.KubernetesLabel(name="portico.dev/pool", value=pool)],
            )
            for pool, kind, count in pools
        ],
    )


async def seed_demo_clusters(
    store: ObjectStore, provider: MachineProvider, clock: Clock, versions: Sequence[str]
) -> bool:
    """Create the demo clusters unless this database was seeded before; whether it seeded."""
    ordered = sorted(versions, key=lambda v: parse_version(v) or (0, 0, 0))
    if not ordered:
        log.warning("demo: no supported Kubernetes versions configured; no demo clusters")
        return False
    newest = ordered[-1]
    steady = ordered[-2] if len(ordered) > 1 else newest
    now = clock.now()
    async with store.transaction() as tx:
        if await tx.get(*DEMO_MARKER) is not None:
            return False
        in_use = {m.ip for m in await load_all_machines(tx) if m.holds_ip}

        async def add(
            spec: api_pb2.CreateClusterMsg,
            status: api_pb2.ClusterStatus,
            adjust: Callable[[Machine], Machine] | None = None,
            since: int = now,
            kubeconfig: bool = False,
            upgrade_to: str = "",
        ) -> None:
            if await tx.get(CLUSTER, spec.name) is not None:
                return  # a user's cluster of that name wins
            machines: list[Machine] = []
            if adjust is not None:
                wanted = list(desired_machines(spec).values())
                machines = [
                    adjust(m) for m in provider.allocate(wanted, in_use_ips=in_use, now=since)
                ]
                in_use.update(m.ip for m in machines)
            detail = api_pb2.ClusterDetailItem(name=spec.name, status=status)
            if kubeconfig:
                plane = next(m for m in machines if m.pool == CONTROL_PLANE_POOL)
                detail.kubeconfig = issue_kubeconfig(spec.name, plane.ip, now=clock.time_of(since))
            if upgrade_to:
                detail.status_message = f"upgrading from {spec.k8s_version} to {upgrade_to}"
                spec.k8s_version = upgrade_to
            await _store(tx, spec, detail, machines)

        def unchanged(machine: Machine) -> Machine:
            return machine

        await add(
            _spec("demo-running", steady, 1, ("workers", "standard", 2)),
            api_pb2.PROVISIONING,
            unchanged,
            since=now - _LONG_AGO_STEPS,
        )
        await add(
            _spec("demo-provisioning", newest, 3, ("workers", "standard", 3), ("gpu", "gpu", 1)),
            api_pb2.PROVISIONING,
        )

        def fail_one_worker(machine: Machine) -> Machine:
            failing = machine.role is Role.WORKER and machine.index == 1
            if not failing:
                return machine
            return replace(machine, fails_deployment=True, retries=MAX_DEPLOY_RETRIES)

        await add(
            _spec("demo-degraded", steady, 1, ("workers", "standard", 3)),
            api_pb2.PROVISIONING,
            fail_one_worker,
        )
        upgradable = [v for v in ordered if upgrade_targets(v, ordered)]
        if upgradable:
            source = upgradable[-1]
            target = upgrade_targets(source, ordered)[-1]
            # Was RUNNING on ``source``; the upgrade is an ordinary spec change in progress.
            await add(
                _spec("demo-upgrading", source, 1, ("workers", "standard", 2)),
                api_pb2.RECONCILING,
                unchanged,
                since=now - _LONG_AGO_STEPS,
                kubeconfig=True,
                upgrade_to=target,
            )
        await tx.create(*DEMO_MARKER, b"")
    log.info("demo: seeded the demo clusters")
    return True


async def _store(
    tx: Transaction,
    spec: api_pb2.CreateClusterMsg,
    detail: api_pb2.ClusterDetailItem,
    machines: list[Machine],
) -> None:
    await tx.create(CLUSTER_SPEC, spec.name, spec)
    await reserve_machines(tx, machine_count(spec))
    await tx.create(CLUSTER, spec.name, detail)
    for machine in machines:
        await tx.create(MACHINE, key_of(machine), machine_data(machine))


def demo_job(
    store: ObjectStore,
    provider: MachineProvider,
    clock: Clock,
    versions: Sequence[str],
) -> Callable[[], Awaitable[None]]:
    """A leader job that seeds the demo once, then idles."""

    async def seed_demo() -> None:
        await seed_demo_clusters(store, provider, clock, versions)
        # A job that returned would be run again; the demo is seeded once per start.
        await asyncio.Event().wait()

    return seed_demo
