"""What a well-formed edge object looks like, checked before anything is read or written.

Names follow upstream's object-name rule rather than DNS labels, because the document's names are
organisations ("AT&T", "T-Mobile"): 1-63 characters of letters, digits and ``-_ .&,!``, starting
with a letter or digit and not ending in a space. App versions and flavor names are stricter
(``[A-Za-z0-9][-_A-Za-z0-9.]*``). Access ports are ``proto:port`` pairs (tcp, udp, http).
A cloudlet's location is a latitude in -90..90 and a longitude in -180..180 degrees, as upstream's
``IsLatitudeValid``/``IsLongitudeValid`` require (so NaN and infinities are refused too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf.message import Message

import app.services.edge.kinds as k
from app.services.edge import field_rules
from app.services.status import Violations
from gen.edgeproto import (
    app_inst_pb2,
    app_pb2,
    cloudlet_pb2,
    cluster_pb2,
    clusterinst_pb2,
    common_pb2,
    controller_pb2,
    developer_pb2,
    flavor_pb2,
    node_pb2,
    operator_pb2,
)


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid object name (field_rules.EDGE_NAME), or None."""
    return field_rules.EDGE_NAME.problem(name) if name else "is required"


def token_problem(value: str, *, required: bool) -> str | None:
    """Why ``value`` is not a version/flavor-style token (EDGE_TOKEN), or None."""
    if not value:
        return "is required" if required else None
    return field_rules.EDGE_TOKEN.problem(value)


def _name(found: Violations, path: str, value: str) -> None:
    problem = name_problem(value)
    if problem:
        found.add(path, problem)


def check_developer_key(
    found: Violations, key: developer_pb2.DeveloperKey, path: str = "key"
) -> None:
    _name(found, f"{path}.name", key.name)


def check_operator_key(found: Violations, key: operator_pb2.OperatorKey, path: str = "key") -> None:
    _name(found, f"{path}.name", key.name)


def check_flavor_key(found: Violations, key: flavor_pb2.FlavorKey, path: str = "key") -> None:
    problem = token_problem(key.name, required=True)
    if problem:
        found.add(f"{path}.name", problem)


def check_cluster_key(found: Violations, key: cluster_pb2.ClusterKey, path: str = "key") -> None:
    _name(found, f"{path}.name", key.name)


def check_app_key(found: Violations, key: app_pb2.AppKey, path: str = "key") -> None:
    check_developer_key(found, key.developer_key, f"{path}.developer_key")
    _name(found, f"{path}.name", key.name)
    problem = token_problem(key.version, required=False)
    if problem:
        found.add(f"{path}.version", problem)


def check_cloudlet_key(found: Violations, key: cloudlet_pb2.CloudletKey, path: str = "key") -> None:
    check_operator_key(found, key.operator_key, f"{path}.operator_key")
    _name(found, f"{path}.name", key.name)


def check_cluster_inst_key(
    found: Violations, key: clusterinst_pb2.ClusterInstKey, path: str = "key"
) -> None:
    check_cluster_key(found, key.cluster_key, f"{path}.cluster_key")
    check_cloudlet_key(found, key.cloudlet_key, f"{path}.cloudlet_key")
    _name(found, f"{path}.developer", key.developer)


def check_app_inst_key(found: Violations, key: app_inst_pb2.AppInstKey, path: str = "key") -> None:
    check_app_key(found, key.app_key, f"{path}.app_key")
    check_cluster_inst_key(found, key.cluster_inst_key, f"{path}.cluster_inst_key")


def check_controller_key(
    found: Violations, key: controller_pb2.ControllerKey, path: str = "key"
) -> None:
    if not key.addr:
        found.add(f"{path}.addr", "is required")


def check_node_key(found: Violations, key: node_pb2.NodeKey, path: str = "key") -> None:
    _name(found, f"{path}.name", key.name)
    if key.node_type not in node_pb2.NodeType.values():
        found.add(f"{path}.node_type", f"unknown node type {key.node_type}")


# Each kind's checks take that kind's key or object: the kind is the table's key.
KEY_CHECKS: dict[str, Callable[[Violations, Any, str], None]] = {
    k.DEVELOPER.name: check_developer_key,
    k.OPERATOR.name: check_operator_key,
    k.FLAVOR.name: check_flavor_key,
    k.CLUSTER.name: check_cluster_key,
    k.APP.name: check_app_key,
    k.CLOUDLET.name: check_cloudlet_key,
    k.CLUSTER_INST.name: check_cluster_inst_key,
    k.APP_INST.name: check_app_inst_key,
    k.CLOUDLET_INFO.name: check_cloudlet_key,
    k.CLUSTER_INST_INFO.name: check_cluster_inst_key,
    k.APP_INST_INFO.name: check_app_inst_key,
    k.CONTROLLER.name: check_controller_key,
    k.NODE.name: check_node_key,
    k.CLOUDLET_REFS.name: check_cloudlet_key,
    k.CLUSTER_REFS.name: check_cluster_inst_key,
}


def check_key(kind: k.EdgeType, obj: Message, found: Violations) -> None:
    """Violations of the object's key (every part named and well-formed)."""
    KEY_CHECKS[kind.name](found, kind.key_of(obj), "key")


def _check_flavor(found: Violations, obj: flavor_pb2.Flavor) -> None:
    found.check(obj.ram > 0, "ram", "must be positive (MB of RAM)")
    found.check(obj.vcpus > 0, "vcpus", "must be positive (vCPU cores)")


def _check_app(found: Violations, obj: app_pb2.App) -> None:
    if k.is_empty(obj.default_flavor):
        found.add("default_flavor.name", "is required (the App's default Flavor)")
    else:
        check_flavor_key(found, obj.default_flavor, "default_flavor")
    found.check(obj.image_type in app_pb2.ImageType.values(), "image_type", "unknown image type")
    found.check(obj.del_opt in app_pb2.DeleteType.values(), "del_opt", "unknown delete option")
    # access_ports' syntax is its field rule (field_rules.py), checked before this.


def _check_optional_flavor(path: str) -> Callable[[Violations, Message], None]:
    def check(found: Violations, obj: Message) -> None:
        flavor = getattr(obj, path)
        if not k.is_empty(flavor):
            check_flavor_key(found, flavor, path)

    return check


def _check_cloudlet(found: Violations, obj: cloudlet_pb2.Cloudlet) -> None:
    found.check(obj.ip_support in common_pb2.IpSupport.values(), "ip_support", "unknown IP support")
    found.check(obj.num_dynamic_ips >= 0, "num_dynamic_ips", "must not be negative")
    # static_ips' syntax is its field rule (field_rules.py), checked before this.
    location = obj.location
    # Written as "within" so that NaN, which compares false with everything, is refused.
    found.check(
        -90.0 <= location.latitude <= 90.0,
        "location.latitude",
        f"must be from -90 to 90 degrees (got {location.latitude})",
    )
    found.check(
        -180.0 <= location.longitude <= 180.0,
        "location.longitude",
        f"must be from -180 to 180 degrees (got {location.longitude})",
    )


def _check_cluster_inst(found: Violations, obj: clusterinst_pb2.ClusterInst) -> None:
    _check_optional_flavor("flavor")(found, obj)
    found.check(obj.ip_access in common_pb2.IpAccess.values(), "ip_access", "unknown IP access")
    found.check(
        obj.crm_override in common_pb2.CRMOverride.values(), "crm_override", "unknown override"
    )
    found.check(obj.num_masters <= 16, "num_masters", "must be at most 16")
    found.check(obj.num_nodes <= 1000, "num_nodes", "must be at most 1000")


def _check_app_inst(found: Violations, obj: app_inst_pb2.AppInst) -> None:
    _check_optional_flavor("flavor")(found, obj)
    found.check(
        obj.auto_cluster_ip_access in common_pb2.IpAccess.values(),
        "auto_cluster_ip_access",
        "unknown IP access",
    )
    found.check(
        obj.crm_override in common_pb2.CRMOverride.values(), "crm_override", "unknown override"
    )
    developer = obj.key.app_key.developer_key.name
    owner = obj.key.cluster_inst_key.developer
    if developer and owner and developer != owner:
        found.add(
            "key.cluster_inst_key.developer",
            f"must be the App's developer {developer!r}: an AppInst runs on its developer's "
            "ClusterInst",
        )


BODY_CHECKS: dict[str, Callable[[Violations, Any], None]] = {
    k.FLAVOR.name: _check_flavor,
    k.APP.name: _check_app,
    k.CLUSTER.name: _check_optional_flavor("default_flavor"),
    k.CLOUDLET.name: _check_cloudlet,
    k.CLUSTER_INST.name: _check_cluster_inst,
    k.APP_INST.name: _check_app_inst,
}


def check_object(kind: k.EdgeType, obj: Message, found: Violations) -> None:
    """Violations of a whole object as it would be stored (key and body)."""
    check_key(kind, obj, found)
    body = BODY_CHECKS.get(kind.name)
    if body is not None:
        body(found, obj)
