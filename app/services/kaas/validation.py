"""Request validation of the cluster manager: every problem found, each naming its field.

The rules a field states on its own (DNS-label names, control planes of 1, 3 or 5 machines for an
etcd quorum, ``standard`` or ``gpu`` machines, 1 to ``MAX_MACHINES_PER_POOL`` machines a pool, at
most ``MAX_WORKER_POOLS`` pools, Kubernetes label syntax, ``control-plane`` reserved for the
control plane's own machines) are in :mod:`app.services.kaas.field_rules`, which the OpenAPI
document also reads. What needs more than one field is here: a supported version, pool names
and label keys unique, the pools of a cluster in all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from app.rules.field_checks import FieldChecks
from app.rules.field_rule import Rule
from app.services.checked import rule_violations
from app.services.kaas import field_rules
from app.services.status import Violations
from app.settings.limits import MAX_WORKER_POOLS, shown
from gen.cnct.kaas.api import api_pb2

_API = "cnct.kaas.api.Cluster."
CREATE = _API + "CreateCluster"
ADD_POOLS = _API + "AddNodePool"
DELETE_POOLS = _API + "DeleteNodePool"
SCALE_POOLS = _API + "ScaleNodePool"
UPGRADE = _API + "UpgradeCluster"
# The API's own rules, applied where a request's validation reports them with its own.
CHECKS = FieldChecks(field_rules.RULES)


def check_labels(v: Violations, path: str, labels: Iterable[api_pb2.KubernetesLabel]) -> None:
    """No label key twice (their syntax is a field rule)."""
    seen: set[str] = set()
    for i, label in enumerate(labels):
        # Every create passes here: the message is spelled out only for a label given twice.
        if label.name in seen:
            v.add(f"{path}[{i}].name", f"label {label.name!r} given twice")
        seen.add(label.name)


def check_pools(v: Violations, path: str, pools: Sequence[api_pb2.MachineSpec]) -> None:
    """Worker pools: names unique among themselves (clashes with a cluster's pools are
    ALREADY_EXISTS, which the servicer decides), labels unique in each."""
    if len(pools) > MAX_WORKER_POOLS:
        return  # the field rule said so; not worth looking at each of them
    names: set[str] = set()
    for i, pool in enumerate(pools):
        where = f"{path}[{i}]"
        check_pool_name(v, f"{where}.name", pool.name, names)
        check_labels(v, f"{where}.labels", pool.labels)


def check_pool_total(v: Violations, path: str, total: int) -> bool:
    """At most ``MAX_WORKER_POOLS`` worker pools in a cluster; returns whether within."""
    return v.check(
        total <= MAX_WORKER_POOLS,
        path,
        f"a cluster has at most {MAX_WORKER_POOLS} worker pools (this would make {total})",
    )


def check_pool_name(
    v: Violations, path: str, name: str, seen: set[str], rule: Rule = field_rules.POOL_NAME
) -> None:
    """A pool's name not already in ``seen`` (its syntax is the field rule ``rule``)."""
    if name in seen and not rule.problem(name):
        v.add(path, f"pool {name!r} given twice")
    seen.add(name)


def check_create(msg: api_pb2.CreateClusterMsg, versions: Sequence[str]) -> Violations:
    """Every problem of a CreateCluster request."""
    v = rule_violations(CHECKS, msg, CREATE)
    if msg.k8s_version and msg.k8s_version not in versions:
        v.add(
            "k8s_version",
            f"must be one of the supported versions {', '.join(versions)} "
            f"(got {shown(msg.k8s_version)})",
        )
    check_labels(v, "control_plane_nodes.labels", msg.control_plane_nodes.labels)
    check_pools(v, "worker_node_pools", msg.worker_node_pools)
    return v


def check_add_pools(msg: api_pb2.AddNodePoolMsg) -> Violations:
    """Every problem of an AddNodePool request."""
    v = rule_violations(CHECKS, msg, ADD_POOLS)
    check_pools(v, "worker_node_pools", msg.worker_node_pools)
    return v


def check_delete_pools(msg: api_pb2.DeleteNodePoolMsg) -> Violations:
    """Every problem of a DeleteNodePool request."""
    return rule_violations(CHECKS, msg, DELETE_POOLS)  # names, how many, each once: field rules


def check_scale_pools(msg: api_pb2.ScaleNodePoolMsg) -> Violations:
    """Every problem of a ScaleNodePool request (a pool is removed with DeleteNodePool)."""
    v = rule_violations(CHECKS, msg, SCALE_POOLS)
    if len(msg.node_pools) <= MAX_WORKER_POOLS:
        seen: set[str] = set()
        for i, pool in enumerate(msg.node_pools):
            path = f"node_pools[{i}].name"
            check_pool_name(v, path, pool.name, seen, field_rules.SCALED_POOL_NAME)
    return v


def check_upgrade(msg: api_pb2.UpgradeClusterMsg) -> Violations:
    """Every problem of an UpgradeCluster request that does not depend on the cluster."""
    return rule_violations(CHECKS, msg, UPGRADE)
