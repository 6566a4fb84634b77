"""Request validation of the cluster manager: every problem found, each naming its field.

Control planes run 1, 3 or 5 machines (etcd needs an odd quorum); machines are ``standard`` or
``gpu``; pool names are unique DNS labels; pools have at least one machine. ``control-plane``
names the control plane's own machines, so no worker pool may take it. A cluster has at most
``MAX_WORKER_POOLS`` worker pools of at most ``MAX_MACHINES_PER_POOL`` machines (app.limits): a
short request must not commit the simulation to unbounded work.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from app.limits import MAX_MACHINES_PER_POOL, MAX_WORKER_POOLS, shown
from app.services.names import dns_label_problem, label_key_problem, label_value_problem
from app.services.status import Violations
from gen.cnct.kaas.api import api_pb2

CONTROL_PLANE_COUNTS = (1, 3, 5)
INSTANCE_TYPES = ("standard", "gpu")
# The pool name of the control plane's machines (their hostnames are <cluster>-control-plane-<i>).
RESERVED_POOL = "control-plane"


def check_name(v: Violations, path: str, name: str) -> bool:
    """A DNS-label name; returns whether it is valid."""
    problem = dns_label_problem(name)
    return v.check(problem is None, path, problem or "")


def check_labels(v: Violations, path: str, labels: Iterable[api_pb2.KubernetesLabel]) -> None:
    """Kubernetes label syntax, and no key twice."""
    seen: set[str] = set()
    for i, label in enumerate(labels):
        problem = label_key_problem(label.name) or label_value_problem(label.value)
        v.check(problem is None, f"{path}[{i}]", problem or "")
        v.check(label.name not in seen, f"{path}[{i}].name", f"label {label.name!r} given twice")
        seen.add(label.name)


def check_count(v: Violations, path: str, count: int) -> None:
    v.check(
        1 <= count <= MAX_MACHINES_PER_POOL,
        path,
        f"must be between 1 and {MAX_MACHINES_PER_POOL} (got {count})",
    )


def check_instance_type(v: Violations, path: str, instance_type: str) -> None:
    v.check(
        instance_type in INSTANCE_TYPES,
        path,
        f"must be one of {', '.join(INSTANCE_TYPES)} (got {shown(instance_type)})",
    )


def check_pools(v: Violations, path: str, pools: Sequence[api_pb2.MachineSpec]) -> None:
    """Worker pool specs; names unique among themselves (clashes with a cluster's pools are
    ALREADY_EXISTS, which the servicer decides)."""
    if not check_pool_total(v, path, len(pools)):
        return  # not worth looking at each of them
    names: set[str] = set()
    for i, pool in enumerate(pools):
        where = f"{path}[{i}]"
        check_pool_name(v, f"{where}.name", pool.name, names)
        check_instance_type(v, f"{where}.instanceType", pool.instanceType)
        check_count(v, f"{where}.count", pool.count)
        check_labels(v, f"{where}.labels", pool.labels)


def check_pool_total(v: Violations, path: str, total: int) -> bool:
    """At most ``MAX_WORKER_POOLS`` worker pools in a cluster; returns whether within."""
    return v.check(
        total <= MAX_WORKER_POOLS,
        path,
        f"a cluster has at most {MAX_WORKER_POOLS} worker pools (this would make {total})",
    )


def check_pool_name(v: Violations, path: str, name: str, seen: set[str]) -> None:
    """A worker pool's name: a DNS label, not the control plane's, not already in ``seen``."""
    if not check_name(v, path, name):
        return
    if v.check(name != RESERVED_POOL, path, f"{RESERVED_POOL!r} is the control plane's name"):
        v.check(name not in seen, path, f"pool {name!r} given twice")
    seen.add(name)


def check_create(msg: api_pb2.CreateClusterMsg, versions: Sequence[str]) -> Violations:
    """Every problem of a CreateCluster request."""
    v = Violations()
    check_name(v, "name", msg.name)
    v.check(
        msg.k8s_version in versions,
        "k8s_version",
        f"must be one of the supported versions {', '.join(versions)} "
        f"(got {shown(msg.k8s_version)})",
    )
    plane = msg.control_plane_nodes
    v.check(
        plane.count in CONTROL_PLANE_COUNTS,
        "control_plane_nodes.count",
        f"must be 1, 3 or 5 for an etcd quorum (got {plane.count})",
    )
    check_instance_type(v, "control_plane_nodes.instanceType", plane.instanceType)
    check_labels(v, "control_plane_nodes.labels", plane.labels)
    v.check(
        bool(msg.worker_node_pools), "worker_node_pools", "at least one worker pool is required"
    )
    check_pools(v, "worker_node_pools", msg.worker_node_pools)
    return v


def check_add_pools(msg: api_pb2.AddNodePoolMsg) -> Violations:
    """Every problem of an AddNodePool request."""
    v = Violations()
    check_name(v, "clusterName", msg.clusterName)
    v.check(bool(msg.worker_node_pools), "worker_node_pools", "at least one pool is required")
    check_pools(v, "worker_node_pools", msg.worker_node_pools)
    return v


def check_delete_pools(msg: api_pb2.DeleteNodePoolMsg) -> Violations:
    """Every problem of a DeleteNodePool request."""
    v = Violations()
    check_name(v, "clusterName", msg.clusterName)
    v.check(bool(msg.node_pool_names), "node_pool_names", "at least one pool name is required")
    if not check_pool_total(v, "node_pool_names", len(msg.node_pool_names)):
        return v
    seen: set[str] = set()
    for i, name in enumerate(msg.node_pool_names):
        check_pool_name(v, f"node_pool_names[{i}]", name, seen)
    return v


def check_scale_pools(msg: api_pb2.ScaleNodePoolMsg) -> Violations:
    """Every problem of a ScaleNodePool request (a pool is removed with DeleteNodePool)."""
    v = Violations()
    check_name(v, "clusterName", msg.clusterName)
    v.check(bool(msg.node_pools), "node_pools", "at least one pool is required")
    if not check_pool_total(v, "node_pools", len(msg.node_pools)):
        return v
    seen: set[str] = set()
    for i, pool in enumerate(msg.node_pools):
        check_pool_name(v, f"node_pools[{i}].name", pool.name, seen)
        check_count(v, f"node_pools[{i}].count", pool.count)
    return v


def check_upgrade(msg: api_pb2.UpgradeClusterMsg) -> Violations:
    """Every problem of an UpgradeCluster request that does not depend on the cluster."""
    v = Violations()
    check_name(v, "name", msg.name)
    v.check(bool(msg.version), "version", "is required")
    return v
