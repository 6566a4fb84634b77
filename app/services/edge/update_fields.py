"""What an edge Update's ``fields`` may name, as one regular expression per object type.

Upstream's Update APIs list the fields to change by number, dotted for nested fields (``"9.1"``
is an App's ``default_flavor.name``), or by proto field name (``"default_flavor.name"``), with
spaces around allowed; each part of a path may be either. The key (and ``fields`` itself) names
the object and cannot change, and the fields the controller or the resource manager sets are
not the user's. The paths an object type leaves are finite (its messages do not recurse), so one
regex says them all, for the server's check and for the OpenAPI document alike.
"""

from __future__ import annotations

from typing import cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from app.rules.text_patterns import SPACES
from gen.edgeproto import (
    app_inst_pb2,
    app_pb2,
    cloudlet_pb2,
    cluster_pb2,
    clusterinst_pb2,
    developer_pb2,
    flavor_pb2,
    operator_pb2,
)

# The types users update. The stubs type DESCRIPTOR as the pure-Python or the upb class; both
# have the descriptor API used here.
UPDATED: dict[str, Descriptor] = {
    message.DESCRIPTOR.name: cast(Descriptor, message.DESCRIPTOR)
    for message in (
        developer_pb2.Developer,
        operator_pb2.Operator,
        flavor_pb2.Flavor,
        cluster_pb2.Cluster,
        app_pb2.App,
        cloudlet_pb2.Cloudlet,
        clusterinst_pb2.ClusterInst,
        app_inst_pb2.AppInst,
    )
}

# Fields the controller or the resource manager owns (observed state), by object type.
# ip_access is settled (and an address taken) at create; changing it needs a new ClusterInst.
READ_ONLY: dict[str, frozenset[str]] = {
    "ClusterInst": frozenset(
        {"state", "errors", "allocated_ip", "node_flavor", "auto", "liveness", "ip_access"}
    ),
    "AppInst": frozenset(
        {
            "state",
            "errors",
            "runtime_info",
            "created_at",
            "uri",
            "mapped_ports",
            "cloudlet_loc",
            "liveness",
        }
    ),
}
# The fields that name the object, in every type.
PROTECTED = frozenset({"key", "fields"})


def pattern(desc: Descriptor) -> str:
    """One entry of ``fields`` of an Update of ``desc``'s objects."""
    excluded = PROTECTED | READ_ONLY.get(desc.name, frozenset())
    top = [fd for fd in desc.fields if fd.name not in excluded]
    if not top:
        return "^(?!)$"  # nothing to update (an Operator is its key): no entry is right
    return f"^[{SPACES}]*{_paths(top, frozenset({desc.full_name}))}[{SPACES}]*$"


def _paths(fields: list[FieldDescriptor], seen: frozenset[str]) -> str:
    """Any path starting at one of ``fields``: the field, then a path into its message."""
    branches = []
    for fd in fields:
        # A number with leading zeros or the name (int() reads "009" as 9).
        branch = f"(0*{fd.number}|{fd.name})"
        sub = fd.message_type
        if sub is not None and not fd.is_repeated and sub.fields:
            if sub.full_name in seen:
                raise ValueError(f"{sub.full_name} recurses: no regex lists its paths")
            branch += rf"(\.{_paths(list(sub.fields), seen | {sub.full_name})})?"
        branches.append(branch)
    return "(" + "|".join(branches) + ")"
