"""How the cluster manager keeps clusters in the store: kinds, keys and the desired machines.

Four kinds and a counter, written together in transactions: the kinds::

    kind               key                    message            holds
    kaas.cluster       <name>                 ClusterDetailItem  status, message, kubeconfig
    kaas.cluster_spec  <name>                 CreateClusterMsg   version, control plane, pools
    kaas.machine       <name>/<pool>/<index>  Struct             one machine (Machine.to_dict)
    kaas.deployments   <name>/<pool>/<index>  Int64Value         deployments of released slots

and the counter ``kaas.reserved_machines``, the machines all specs ask for (the reservation).

The spec is the desired state (``k8s_version`` is the version the cluster should run); the
reconciler compares it with the machines and writes the observed status. The reservation is
the sum of every stored spec's machines, kept in step with every spec written or deleted, so
checking the address pool's room costs one read instead of a scan of every cluster; it is a
store counter (one statement a change, no event), counted from the specs the first time a
database is without it (new, or kept by a version that stored it as an object). A slot whose
machine was released while the cluster lives (its pool deleted or scaled down) keeps how many
deployments it had, so a machine allocated there again (the pool added back) draws its next
deployment's fault rather than repeating the first; they go with the cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from google.protobuf import struct_pb2, wrappers_pb2

from app.services.plain_data import from_struct, to_struct
from app.sim.machine_model import Machine, MachineRequest, Role
from app.store import Reader, Record, Transaction, Writer
from gen.cnct.kaas.api import api_pb2

CLUSTER = "kaas.cluster"
CLUSTER_SPEC = "kaas.cluster_spec"
MACHINE = "kaas.machine"
DEPLOYMENTS = "kaas.deployments"
RESERVED = "kaas.reserved_machines"  # a store counter
# Where versions before schema 3 kept the reservation (an object): removed once it is counted.
OLD_RESERVATION = ("kaas.reservation", "machines")

# The control plane's machines form a pool of their own; worker pools may not take its name.
CONTROL_PLANE_POOL = "control-plane"

Slot = tuple[str, int]  # (pool, index)


async def reserved_machines(tx: Transaction) -> int:
    """How many machines the stored specs ask for, all clusters together."""
    total = await tx.counter(RESERVED)
    return await _count_reserved(tx) if total is None else total


async def reserve_machines(tx: Transaction, delta: int) -> int:
    """Change the reservation by ``delta`` machines (negative when specs shrink or go), after
    the specs that changed were written; returns the new reservation."""
    total = await tx.add_to_counter(RESERVED, delta)
    return await _count_reserved(tx) if total is None else total


async def _count_reserved(tx: Transaction) -> int:
    """The reservation counted from every stored spec (this transaction's writes included) and
    kept as the counter; the object an older version kept it in goes."""
    specs = await tx.list(CLUSTER_SPEC)
    # Thousands of specs take a while to parse: off the loop, as machines are.
    total = await asyncio.to_thread(_machines_asked, specs)
    await tx.set_counter(RESERVED, total)
    if await tx.get(*OLD_RESERVATION) is not None:
        await tx.delete(*OLD_RESERVATION)
    return total


def _machines_asked(specs: list[Record]) -> int:
    return sum(machine_count(r.parse(api_pb2.CreateClusterMsg)) for r in specs)


def machine_key(cluster: str, pool: str, index: int) -> str:
    """The store key of a cluster's machine slot."""
    return f"{cluster}/{pool}/{index}"


def key_of(machine: Machine) -> str:
    """The store key of ``machine``."""
    return machine_key(machine.cluster, machine.pool, machine.index)


async def keep_deployments(tx: Writer, machine: Machine) -> None:
    """Remember how many deployments the released machine's slot had (it may be wanted again)."""
    count = wrappers_pb2.Int64Value(value=machine.attempt + 1)
    if await tx.get(DEPLOYMENTS, key_of(machine)) is None:
        await tx.create(DEPLOYMENTS, key_of(machine), count)
    else:
        await tx.update(DEPLOYMENTS, key_of(machine), count)


async def forget_deployments(tx: Writer, cluster: str) -> None:
    """Drop the slot histories of a cluster that is gone."""
    for record in await tx.list(DEPLOYMENTS, f"{cluster}/"):
        await tx.delete(DEPLOYMENTS, record.key)


def parse_deployments(records: Iterable[Record]) -> dict[str, dict[Slot, int]]:
    """Deployment counts by cluster name and slot, from ``kaas.deployments`` records."""
    found: dict[str, dict[Slot, int]] = {}
    for record in records:
        cluster, pool, index = record.key.rsplit("/", 2)
        count = record.parse(wrappers_pb2.Int64Value).value
        found.setdefault(cluster, {})[(pool, int(index))] = count
    return found


def machine_data(machine: Machine) -> struct_pb2.Struct:
    """The stored form of a machine."""
    return to_struct(machine.to_dict())


def parse_machine(record: Record) -> Machine:
    """A machine from its record."""
    return Machine.from_dict(from_struct(Machine, record.parse(struct_pb2.Struct)))


@dataclass(frozen=True)
class ClusterState:
    """One cluster as stored: desired spec, observed status and its machines."""

    spec: api_pb2.CreateClusterMsg
    status: api_pb2.ClusterDetailItem
    machines: tuple[Machine, ...]
    # Deployments so far of slots whose machine was released (see the module docstring).
    deployments: Mapping[Slot, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name


async def cluster_records(reader: Reader, name: str) -> tuple[Record, Record, list[Record]] | None:
    """The records of cluster ``name``: its status, its spec and its machines (None if none)."""
    status = await reader.get(CLUSTER, name)
    spec = await reader.get(CLUSTER_SPEC, name)
    if status is None or spec is None:
        return None
    return status, spec, await reader.list(MACHINE, f"{name}/")


async def load_cluster(reader: Reader, name: str) -> ClusterState | None:
    """The cluster ``name``, or None if there is none."""
    found = await cluster_records(reader, name)
    return None if found is None else await cluster_state(*found)


async def cluster_state(status: Record, spec: Record, machines: list[Record]) -> ClusterState:
    """A cluster from its records (see :func:`cluster_records`)."""
    return ClusterState(
        spec.parse(api_pb2.CreateClusterMsg),
        status.parse(api_pb2.ClusterDetailItem),
        tuple(await asyncio.to_thread(parse_machines, machines)),
    )


def parse_machines(records: list[Record]) -> list[Machine]:
    """Machines from their records (thousands take a while: callers run it off the loop)."""
    return [parse_machine(r) for r in records]


async def load_all_machines(reader: Reader) -> list[Machine]:
    """Every machine of every cluster."""
    return await asyncio.to_thread(parse_machines, await reader.list(MACHINE))


def pool_names(spec: api_pb2.CreateClusterMsg) -> list[str]:
    """The worker pools' names, in the order they were added."""
    return [pool.name for pool in spec.worker_node_pools]


def desired_machines(spec: api_pb2.CreateClusterMsg) -> dict[Slot, MachineRequest]:
    """Every machine the spec asks for, control plane first, by (pool, index)."""
    plane = spec.control_plane_nodes
    wanted: dict[Slot, MachineRequest] = {}
    for index in range(plane.count):
        wanted[(CONTROL_PLANE_POOL, index)] = MachineRequest(
            spec.name,
            CONTROL_PLANE_POOL,
            index,
            spec.k8s_version,
            Role.CONTROL_PLANE,
            plane.instanceType,
        )
    for pool in spec.worker_node_pools:
        for index in range(pool.count):
            wanted[(pool.name, index)] = MachineRequest(
                spec.name, pool.name, index, spec.k8s_version, Role.WORKER, pool.instanceType
            )
    return wanted


def machine_count(spec: api_pb2.CreateClusterMsg) -> int:
    """How many machines the spec asks for: ``len(desired_machines(spec))``, without building
    each one's request (every create and pool change counts them)."""
    counts = {CONTROL_PLANE_POOL: spec.control_plane_nodes.count}
    for pool in spec.worker_node_pools:
        # A pool name given twice names the same slots, as in desired_machines.
        counts[pool.name] = max(counts.get(pool.name, 0), pool.count)
    return sum(counts.values())


def machine_order(spec: api_pb2.CreateClusterMsg) -> dict[str, int]:
    """Sort rank of each pool: control plane, then worker pools as added (others last)."""
    return {name: rank for rank, name in enumerate([CONTROL_PLANE_POOL, *pool_names(spec)])}


def sorted_machines(spec: api_pb2.CreateClusterMsg, machines: Iterable[Machine]) -> list[Machine]:
    """Machines in the order users read them: control plane, pools as added, by index."""
    rank = machine_order(spec)
    return sorted(machines, key=lambda m: (rank.get(m.pool, len(rank)), m.pool, m.index))


def cluster_item(detail: api_pb2.ClusterDetailItem) -> api_pb2.ClusterItem:
    """The list form of a cluster (no kubeconfig)."""
    return api_pb2.ClusterItem(
        name=detail.name, status_message=detail.status_message, status=detail.status
    )


def machine_status(machine: Machine) -> api_pb2.GetClusterNodesStatusReply.MachineStatus:
    """The machine as ``GetClusterNodesStatus`` reports it."""
    return api_pb2.GetClusterNodesStatusReply.MachineStatus(
        k8sNodeStatus=machine.k8s_status,
        k8sVersion=machine.k8s_version,
        maasSystemId=machine.system_id,
        maasHostname=machine.hostname,
        maasNodeStatus=machine.maas_status,
        maasIPAddr=machine.ip,
    )
