"""What the KaaS API's request fields may hold (see :mod:`app.rules.rule_book`)."""

from __future__ import annotations

from dataclasses import replace

from app.rules.field_rule import Rule
from app.rules.named_rules import DNS_LABEL, REQUIRED
from app.rules.rule_book import RuleBook
from app.settings.limits import MAX_MACHINES_PER_POOL, MAX_WORKER_POOLS

# Kubernetes label keys ([prefix/]name) and values.
LABEL_KEY = Rule(
    required=True,
    # The lookahead bounds the prefix to 253 characters.
    pattern=r"^(?![^/]{254,}/)([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$",
    says="is not a label key: an optional DNS-subdomain prefix of at most 253 characters and "
    "'/', then a name of 1-63 characters of [A-Za-z0-9-_.] starting and ending with a letter "
    "or digit",
    max_length=253 + 1 + 63,
    note="No two labels of one list have the same key.",
)
LABEL_VALUE = Rule(
    pattern=r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
    says="must be a label value: letters, digits and -_., starting and ending with a letter "
    "or digit",
    max_length=63,
)
POOL_NAME = replace(
    DNS_LABEL,
    required=True,
    reserved=("control-plane",),  # the control plane's own machines
    note="Pool names are unique in a request and in the cluster.",
)
# Scaling ``control-plane`` to its own size deploys its failed machines again (a repair).
SCALED_POOL_NAME = replace(
    POOL_NAME,
    reserved=(),
    note="A worker pool, or control-plane at its own size: failed machines are deployed again.",
)
INSTANCE_TYPE = Rule(required=True, choices=("standard", "gpu"))
POOL_COUNT = Rule(required=True, minimum=1, maximum=MAX_MACHINES_PER_POOL)
POOLS = Rule(max_items=MAX_WORKER_POOLS, note="A cluster has at most 10 worker pools in all.")

_KAAS = "cnct.kaas.api."

RULES = RuleBook(
    fields={
        **{
            _KAAS + name: DNS_LABEL
            for name in (
                "CreateClusterMsg.name",
                "GetClusterMsg.name",
                "DeleteClusterMsg.name",
                "GetClusterNodesStatusMsg.clusterName",
                "AddNodePoolMsg.clusterName",
                "DeleteNodePoolMsg.clusterName",
                "ScaleNodePoolMsg.clusterName",
                "GetUpgradeClusterInformationMsg.name",
                "UpgradeClusterMsg.name",
            )
        },
        _KAAS + "CreateClusterMsg.k8s_version": Rule(
            note="One of the versions GetVersionInformation lists."
        ),
        _KAAS + "CreateClusterMsg.worker_node_pools": replace(POOLS, note=""),  # maxItems says it
        _KAAS + "AddNodePoolMsg.worker_node_pools": POOLS,
        _KAAS + "ScaleNodePoolMsg.node_pools": replace(POOLS, note=""),
        _KAAS + "DeleteNodePoolMsg.node_pool_names": replace(
            POOL_NAME, max_items=MAX_WORKER_POOLS, unique=True, note=""
        ),
        _KAAS + "ControlPlaneMachineSpec.count": Rule(
            required=True, choices=(1, 3, 5), says="must be 1, 3 or 5 for an etcd quorum"
        ),
        _KAAS + "ControlPlaneMachineSpec.instanceType": INSTANCE_TYPE,
        _KAAS + "MachineSpec.name": POOL_NAME,
        _KAAS + "MachineSpec.instanceType": INSTANCE_TYPE,
        _KAAS + "MachineSpec.count": POOL_COUNT,
        _KAAS + "ScaleNodePoolSpec.name": SCALED_POOL_NAME,
        _KAAS + "ScaleNodePoolSpec.count": POOL_COUNT,
        _KAAS + "KubernetesLabel.name": LABEL_KEY,
        _KAAS + "KubernetesLabel.value": LABEL_VALUE,
    },
    calls={
        _KAAS + "Cluster.CreateCluster": {
            "name": REQUIRED,
            "k8s_version": REQUIRED,
            "control_plane_nodes": REQUIRED,
            "worker_node_pools": Rule(min_items=1),
        },
        **{
            f"{_KAAS}Cluster.{method}": {name: REQUIRED}
            for method, name in (
                ("GetCluster", "name"),
                ("DeleteCluster", "name"),
                ("GetClusterNodesStatus", "clusterName"),
                ("GetUpgradeClusterInformation", "name"),
            )
        },
        _KAAS + "Cluster.AddNodePool": {
            "clusterName": REQUIRED,
            "worker_node_pools": Rule(min_items=1),
        },
        _KAAS + "Cluster.DeleteNodePool": {
            "clusterName": REQUIRED,
            "node_pool_names": Rule(min_items=1),
        },
        _KAAS + "Cluster.ScaleNodePool": {
            "clusterName": REQUIRED,
            "node_pools": Rule(min_items=1),
        },
        _KAAS + "Cluster.UpgradeCluster": {"name": REQUIRED, "version": REQUIRED},
    },
)
