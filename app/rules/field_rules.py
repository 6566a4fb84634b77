"""What a request's fields may hold: one table, read by the servicers and by the OpenAPI document.

Every rule is written once here. :func:`violations` applies them to a request message (the
servicers' validation runs it on every call, on every transport, before any servicer code), and
:mod:`app.gateway.openapi.document` turns the same rules into JSON Schema keywords, so the published
document admits exactly what the server accepts for these rules.

Two tables:

- :data:`FIELD_RULES`, by full field name: what the field holds wherever its message appears,
  in any request. A rule applies to a value that is set (proto3 cannot tell an explicit zero,
  ``""`` or ``false`` from an absent field: both are "unset"); ``required`` says unset is wrong.
- :data:`CALL_RULES`, by full method name: what one RPC additionally needs, by field path in its
  request (``key.name``; a path through a repeated field applies to each element). Edge objects,
  for instance, name every part of their key to be created, but a Show filter may leave any out.

A rule JSON Schema cannot say (two labels with one name, a version the server supports, a PEM
certificate) is enforced by the servicer and only described: its ``note`` becomes part of the
field's description (the conformance test allows the server to refuse a schema-valid request on
those fields, and on nothing else).
"""

from __future__ import annotations

from dataclasses import replace

from app.rules import update_fields
from app.rules.field_rule import Rule
from app.rules.text_patterns import (
    ACCESS_PORT,
    IMAGE_REFERENCE,
    IP_ADDRESS,
    MAX_IMAGE_REFERENCE,
    listed,
)
from app.settings.limits import (
    MAX_FILTERS,
    MAX_MACHINES_PER_POOL,
    MAX_PORTS_PER_INSTANCE,
    MAX_WORKER_POOLS,
)

REQUIRED = Rule(required=True)

# -- named rules, shared by several fields ------------------------------------------------------

# DNS-1123 labels: Kubernetes object names (KaaS clusters and pools).
DNS_LABEL = Rule(
    pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
    says="must consist of lower case letters, digits and '-', and start and end with a letter "
    "or digit",
    max_length=63,
)
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
# Edge object names: organisations like "AT&T", so upstream's object-name rule, not DNS labels.
EDGE_NAME = Rule(
    pattern=r"^[0-9A-Za-z]([-_0-9A-Za-z .&,!]*[-_0-9A-Za-z.&,!])?$",
    says="must start with a letter or digit, contain only letters, digits, spaces and -_.&,! "
    "and not end in a space",
    max_length=63,
)
EDGE_TOKEN = Rule(
    pattern=r"^[0-9A-Za-z][-_0-9A-Za-z.]*$",
    says="must be letters, digits and -_., starting with a letter or digit",
    max_length=63,
)
# Scheduler instance ids and names: safe in a URL segment, a log line and a cgroup name.
IDENTIFIER = Rule(
    pattern=r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
    says="must be letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
    max_length=63,
)
USERNAME = Rule(
    required=True,
    pattern=r"^[A-Za-z0-9_-]{3,24}$",
    says="must be 3-24 characters of letters, digits, - and _",
)
MIN_PASSWORD_BYTES = 6
MAX_PASSWORD_BYTES = 70  # bcrypt reads at most 72 bytes
PASSWORD = Rule(
    required=True,
    # Characters bound bytes from both sides: 2 characters may be 8 bytes, 71 are at least 71.
    min_length=2,
    max_length=MAX_PASSWORD_BYTES,
    min_bytes=MIN_PASSWORD_BYTES,
    max_bytes=MAX_PASSWORD_BYTES,
    note=f"{MIN_PASSWORD_BYTES}-{MAX_PASSWORD_BYTES} bytes as UTF-8.",
)
PORT = Rule(required=True, minimum=1, maximum=65535)
NOT_NEGATIVE = Rule(minimum=0)
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
_SCHEDULER = "scheduler."
_EDGE = "edgeproto."

FIELD_RULES: dict[str, Rule] = {
    # KaaS
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
    # Scheduler
    _SCHEDULER + "Instance.id": IDENTIFIER,
    _SCHEDULER + "Instance.name": IDENTIFIER,
    _SCHEDULER + "Instance.uri": Rule(
        pattern=IMAGE_REFERENCE,
        says="is not an image reference ([docker:// or oci://][registry[:port]/]path[:tag]"
        "[@digest], lower-case path)",
        max_length=MAX_IMAGE_REFERENCE,
    ),
    _SCHEDULER + "Instance.ports": Rule(
        max_items=MAX_PORTS_PER_INSTANCE, note="No two ports have the same source."
    ),
    _SCHEDULER + "Instance.environnement": Rule(
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*=",
        says="must be NAME=value with NAME of letters, digits and _ (not starting with a digit)",
        max_items=256,
    ),
    _SCHEDULER + "Port.source": PORT,
    _SCHEDULER + "Port.destination": PORT,
    **{_SCHEDULER + f"ResourceSummary.{d}": NOT_NEGATIVE for d in ("cpu", "memory", "disk")},
    _SCHEDULER + "NodeRegisterRequest.certificate": Rule(
        note="Required unless the call presents a TLS client certificate: a PEM X.509 "
        "certificate whose CN is the node id, or the node id."
    ),
    # rkt
    "v1alpha.ListPodsRequest.filters": Rule(max_items=MAX_FILTERS),
    "v1alpha.ListImagesRequest.filters": Rule(max_items=MAX_FILTERS),
    "v1alpha.EventFilter.since_time": NOT_NEGATIVE,
    "v1alpha.EventFilter.until_time": replace(
        NOT_NEGATIVE, note="After `since_time` when both are set."
    ),
    "v1alpha.GetLogsRequest.since_time": NOT_NEGATIVE,
    "v1alpha.GetLogsRequest.until_time": replace(
        NOT_NEGATIVE, note="After `since_time` when both are set."
    ),
    "v1alpha.GetLogsRequest.lines": NOT_NEGATIVE,
    "edgeproto.Notice.any": Rule(
        note="An object of a type this server knows (by its `@type` URL), with that type's fields."
    ),
    # Auth
    "services.auth.LoginRequest.username": USERNAME,
    "services.auth.LoginRequest.password": PASSWORD,
    # Edge
    **{
        _EDGE + name: EDGE_NAME
        for name in (
            "DeveloperKey.name",
            "OperatorKey.name",
            "ClusterKey.name",
            "AppKey.name",
            "CloudletKey.name",
            "ClusterInstKey.developer",
            "NodeKey.name",
        )
    },
    _EDGE + "FlavorKey.name": EDGE_TOKEN,
    _EDGE + "AppKey.version": EDGE_TOKEN,
    "distributed_match_engine.Loc.latitude": Rule(minimum=-90, maximum=90),
    "distributed_match_engine.Loc.longitude": Rule(minimum=-180, maximum=180),
    _EDGE + "Cloudlet.num_dynamic_ips": NOT_NEGATIVE,
    _EDGE + "Cloudlet.static_ips": Rule(
        pattern=listed(IP_ADDRESS),
        says="must be comma-separated IP addresses (IPv4, or IPv6 without a zone)",
    ),
    _EDGE + "App.access_ports": Rule(
        pattern=listed(ACCESS_PORT),
        says="must be comma-separated proto:port pairs, proto tcp, udp or http and port 1-65535",
    ),
    _EDGE + "ClusterInst.num_masters": Rule(maximum=16),
    _EDGE + "ClusterInst.num_nodes": Rule(maximum=1000),
}


def _edge_calls() -> dict[str, dict[str, Rule]]:
    """Creating, updating or deleting an edge object names every part of its key."""
    keys = {
        "Developer": ("key.name",),
        "Operator": ("key.name",),
        "Flavor": ("key.name",),
        "Cluster": ("key.name",),
        "App": ("key.developer_key.name", "key.name"),
        "Cloudlet": ("key.operator_key.name", "key.name"),
        "ClusterInst": (
            "key.cluster_key.name",
            "key.cloudlet_key.operator_key.name",
            "key.cloudlet_key.name",
            "key.developer",
        ),
    }
    keys["AppInst"] = tuple(f"key.app_key.{p[4:]}" for p in keys["App"]) + tuple(
        f"key.cluster_inst_key.{p[4:]}" for p in keys["ClusterInst"]
    )
    calls: dict[str, dict[str, Rule]] = {}
    for kind, paths in keys.items():
        for verb in ("Create", "Update", "Delete"):
            rules = dict.fromkeys(paths, REQUIRED)
            if verb == "Update":
                rules["fields"] = Rule(
                    min_items=1,
                    pattern=update_fields.pattern(update_fields.UPDATED[kind]),
                    says=f"names no field of {kind} an update may change (by name or number, "
                    "dotted for nested fields; not the key nor a field the controller sets)",
                )
            calls[f"{_EDGE}{kind}Api.{verb}{kind}"] = rules
    calls[_EDGE + "FlavorApi.CreateFlavor"] |= {"ram": REQUIRED, "vcpus": REQUIRED}
    calls[_EDGE + "NotifyApi.StreamNotice"] = {
        "action": Rule(note="The first notice of a stream is VERSION.")
    }
    for verb in ("Create", "Update"):
        calls[f"{_EDGE}AppInstApi.{verb}AppInst"]["key.cluster_inst_key.developer"] = Rule(
            required=True,
            note="The App's developer: an AppInst runs on its developer's ClusterInst.",
        )
    calls[_EDGE + "AppApi.CreateApp"]["default_flavor.name"] = REQUIRED
    exec_rules = {p.replace("key.", "app_inst_key.", 1): REQUIRED for p in keys["AppInst"]}
    for method in ("RunCommand", "SendLocalRequest"):
        calls[f"{_EDGE}ExecApi.{method}"] = {**exec_rules, "command": REQUIRED}
    for method in ("InjectCloudletInfo", "EvictCloudletInfo"):
        calls[f"{_EDGE}CloudletInfoApi.{method}"] = dict.fromkeys(keys["Cloudlet"], REQUIRED)
    return calls


CALL_RULES: dict[str, dict[str, Rule]] = {
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
    _KAAS + "Cluster.ScaleNodePool": {"clusterName": REQUIRED, "node_pools": Rule(min_items=1)},
    _KAAS + "Cluster.UpgradeCluster": {"name": REQUIRED, "version": REQUIRED},
    _SCHEDULER + "InstanceService.Create": {
        "name": REQUIRED,
        "uri": REQUIRED,
        **{f"resource.limit.{d}": REQUIRED for d in ("cpu", "memory", "disk")},
    },
    **{f"{_SCHEDULER}InstanceService.{m}": {"id": REQUIRED} for m in ("Start", "Stop", "Destroy")},
    _SCHEDULER + "NodeService.Unregister": {"id": REQUIRED},
    _SCHEDULER + "NodeService.Status": {"id": REQUIRED},
    "v1alpha.PublicAPI.InspectPod": {"id": REQUIRED},
    "v1alpha.PublicAPI.InspectImage": {"id": REQUIRED},
    "v1alpha.PublicAPI.GetLogs": {"pod_id": REQUIRED},
    **_edge_calls(),
}
