"""The KaaS API as the server runs it: the cluster manager on simulated machines, its
reconciler, and the demo's clusters."""

from __future__ import annotations

from app.services.api import Api, ApiSystem
from app.services.kaas.demo import demo_job
from app.services.kaas.field_rules import RULES
from app.services.kaas.reconciler import ClusterReconciler
from app.services.kaas.service import ClusterService
from app.settings.config import Settings
from app.sim.clock import SimClock
from app.sim.machines import FaultInjection, IpPool, SimulatedMachineProvider
from app.store import ObjectStore


def kaas_system(store: ObjectStore, settings: Settings) -> ApiSystem:
    """``cnct.kaas.api.Cluster`` over simulated MaaS machines, and the reconciler that
    provisions them (and, with ``demo``, the demo's clusters)."""
    clock = SimClock(settings.sim_step_seconds)
    ips = IpPool(settings.machine_ip_pool)
    machines = SimulatedMachineProvider(
        ip_pool=ips, faults=FaultInjection(settings.sim_failure_ratio, settings.sim_seed)
    )
    system = ApiSystem(
        servicers=[
            ClusterService(
                store, machines, versions=settings.k8s_versions, machine_capacity=ips.capacity
            )
        ],
        jobs=[ClusterReconciler(store, machines, clock).run],
    )
    if settings.demo:
        system.jobs.append(demo_job(store, machines, clock, settings.k8s_versions))
    return system


API = Api("kaas", kaas_system, rules=RULES)
