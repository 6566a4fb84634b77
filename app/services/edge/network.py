"""Public addresses: dedicated IPs for ClusterInsts, root load-balancer ports for AppInsts.

- A ClusterInst's ``ip_access``: SHARED (also what UNKNOWN becomes) puts its AppInsts behind the
  Cloudlet's shared root load balancer; DEDICATED gives it its own address; DEDICATED_OR_SHARED
  takes a dedicated address when one is free and is stored as whichever it got.
- A dedicated address comes from the Cloudlet: with ``IP_SUPPORT_STATIC`` the first of its
  ``static_ips`` not yet in ``CloudletRefs.used_static_ips`` (``allocated_ip`` is that address);
  otherwise (DHCP, ``IP_SUPPORT_DYNAMIC``) one of ``num_dynamic_ips`` is counted in
  ``used_dynamic_ips`` and ``allocated_ip`` is ``dynamic``, because the operator's DHCP server,
  not the controller, picks the address. None left is RESOURCE_EXHAUSTED.
- An AppInst on a shared ClusterInst gets a public port on the root load balancer for each tcp
  and udp port of its App's ``access_ports``: the same number when that is free for the
  protocol, else the lowest free one in :data:`PUBLIC_PORTS`. ``CloudletRefs.root_lb_ports``
  maps each public port to its protocol bitmap (bit 0 tcp, bit 1 udp), so two AppInsts never
  share one. Port 443/tcp is the load balancer's own: http ports are served there under a path
  prefix. An AppInst on a dedicated ClusterInst keeps its ports as they are.
- Deletes give everything back (when the delete completes).
"""

from __future__ import annotations

from typing import Any

import grpc

import app.services.edge.kinds as k
from app.services.edge.records import load, put
from app.services.names import dns_name
from app.services.status import Rejected
from app.store import Reader, Writer
from gen.distributed_match_engine import appcommon_pb2
from gen.edgeproto import common_pb2, refs_pb2

PUBLIC_PORTS = range(10000, 65536)
L7_PORT = 443
DYNAMIC_IP = "dynamic"
IA = common_pb2.IpAccess
_BITS: dict[int, int] = {appcommon_pb2.L_PROTO_TCP: 1, appcommon_pb2.L_PROTO_UDP: 2}
_PROTOCOLS = {
    "tcp": appcommon_pb2.L_PROTO_TCP,
    "udp": appcommon_pb2.L_PROTO_UDP,
    "http": appcommon_pb2.L_PROTO_HTTP,
}


def proto_name(proto: int) -> str:
    """``tcp`` for L_PROTO_TCP."""
    return appcommon_pb2.LProto.Name(proto).removeprefix("L_PROTO_").lower()


def static_ips(text: str) -> list[str]:
    """The comma-separated addresses of ``static_ips`` / ``used_static_ips``."""
    return [part.strip() for part in text.split(",") if part.strip()]


def access_ports(text: str) -> list[appcommon_pb2.AppPort]:
    """The App's ``tcp:80,http:443`` as ports, each public port still equal to its own."""
    ports = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        proto, _, port = item.partition(":")
        number = int(port)
        ports.append(
            appcommon_pb2.AppPort(
                proto=_PROTOCOLS[proto.lower()], internal_port=number, public_port=number
            )
        )
    return ports


async def _refs(reader: Reader, key: Any) -> refs_pb2.CloudletRefs:
    refs = await load(reader, k.CLOUDLET_REFS, key)
    return refs if refs is not None else refs_pb2.CloudletRefs(key=key)


def _exhausted(message: str) -> Rejected:
    return Rejected(grpc.StatusCode.RESOURCE_EXHAUSTED, message)


async def allocate_ip(tx: Writer, inst: Any) -> None:
    """Settle ``inst.ip_access`` and take a dedicated address if it has one."""
    if inst.ip_access in (IA.IP_ACCESS_UNKNOWN, IA.IP_ACCESS_SHARED):
        inst.ip_access = IA.IP_ACCESS_SHARED
        inst.allocated_ip = ""
        return
    cloudlet_key = inst.key.cloudlet_key
    cloudlet = await load(tx, k.CLOUDLET, cloudlet_key)
    refs = await _refs(tx, cloudlet_key)
    address = _free_address(cloudlet, refs)
    if address is None:
        if inst.ip_access == IA.IP_ACCESS_DEDICATED_OR_SHARED:
            inst.ip_access = IA.IP_ACCESS_SHARED
            inst.allocated_ip = ""
            return
        raise _exhausted(
            f"no dedicated IP left on Cloudlet {k.key_string(cloudlet_key)} for ClusterInst "
            f"{k.key_string(inst.key)}: {_ip_usage(cloudlet, refs)}"
        )
    inst.ip_access = IA.IP_ACCESS_DEDICATED
    inst.allocated_ip = address
    if address == DYNAMIC_IP:
        refs.used_dynamic_ips += 1
    else:
        refs.used_static_ips = ",".join([*static_ips(refs.used_static_ips), address])
    await put(tx, k.CLOUDLET_REFS, refs)


def _free_address(cloudlet: Any, refs: refs_pb2.CloudletRefs) -> str | None:
    if cloudlet is None:
        return None
    if cloudlet.ip_support == common_pb2.IP_SUPPORT_STATIC:
        used = set(static_ips(refs.used_static_ips))
        return next((ip for ip in static_ips(cloudlet.static_ips) if ip not in used), None)
    return DYNAMIC_IP if refs.used_dynamic_ips < cloudlet.num_dynamic_ips else None


def _ip_usage(cloudlet: Any, refs: refs_pb2.CloudletRefs) -> str:
    if cloudlet is not None and cloudlet.ip_support == common_pb2.IP_SUPPORT_STATIC:
        total = len(static_ips(cloudlet.static_ips))
        return f"{len(static_ips(refs.used_static_ips))} of {total} static IPs used"
    total = cloudlet.num_dynamic_ips if cloudlet is not None else 0
    return f"{refs.used_dynamic_ips} of {total} dynamic IPs (num_dynamic_ips) used"


def address_shortfall(cloudlet: Any, refs: refs_pb2.CloudletRefs) -> str | None:
    """Why a Cloudlet's addresses no longer cover those in use, or None."""
    if refs.used_dynamic_ips > cloudlet.num_dynamic_ips:
        return (
            f"num_dynamic_ips {cloudlet.num_dynamic_ips} is below the {refs.used_dynamic_ips} "
            "dynamic IPs in use"
        )
    offered = set(static_ips(cloudlet.static_ips))
    missing = [ip for ip in static_ips(refs.used_static_ips) if ip not in offered]
    if missing:
        return f"static_ips must keep {', '.join(missing)} (in use)"
    return None


async def release_ip(tx: Writer, inst: Any) -> None:
    """Give back the dedicated address of ``inst``, if it took one."""
    if inst.ip_access != IA.IP_ACCESS_DEDICATED or not inst.allocated_ip:
        return
    refs = await load(tx, k.CLOUDLET_REFS, inst.key.cloudlet_key)
    if refs is None:
        return
    if inst.allocated_ip == DYNAMIC_IP:
        refs.used_dynamic_ips = max(0, refs.used_dynamic_ips - 1)
    else:
        kept = [ip for ip in static_ips(refs.used_static_ips) if ip != inst.allocated_ip]
        refs.used_static_ips = ",".join(kept)
    await put(tx, k.CLOUDLET_REFS, refs)


def free_public_port(
    used: dict[int, int], proto: int, wanted: int, ports: range = PUBLIC_PORTS
) -> int | None:
    """``wanted`` if it is free for ``proto`` on the root LB, else the lowest free in ``ports``."""
    bit = _BITS[proto]
    reserved = proto == appcommon_pb2.L_PROTO_TCP and wanted == L7_PORT
    if not used.get(wanted, 0) & bit and not reserved:
        return wanted
    return next((port for port in ports if not used.get(port, 0) & bit), None)


async def allocate_ports(tx: Writer, inst: Any, app: Any, cluster: Any) -> None:
    """Set ``inst.mapped_ports`` from the App's ports, taking root LB ports when shared."""
    ports = access_ports(app.access_ports)
    if cluster.ip_access == IA.IP_ACCESS_SHARED:
        cloudlet_key = inst.key.cluster_inst_key.cloudlet_key
        refs = await _refs(tx, cloudlet_key)
        used = dict(refs.root_lb_ports)
        for port in ports:
            if port.proto == appcommon_pb2.L_PROTO_HTTP:
                port.public_port = L7_PORT
                port.path_prefix = _path_prefix(inst, port.internal_port)
                continue
            public = free_public_port(used, port.proto, port.internal_port)
            if public is None:
                raise _exhausted(
                    f"no free {proto_name(port.proto)} port left on the root "
                    f"load balancer of Cloudlet {k.key_string(cloudlet_key)} "
                    f"(ports {PUBLIC_PORTS.start}-{PUBLIC_PORTS.stop - 1} all used)"
                )
            used[public] = used.get(public, 0) | _BITS[port.proto]
            port.public_port = public
        refs.root_lb_ports.clear()
        refs.root_lb_ports.update(used)
        await put(tx, k.CLOUDLET_REFS, refs)
    del inst.mapped_ports[:]
    inst.mapped_ports.extend(ports)


def _path_prefix(inst: Any, port: int) -> str:
    key = inst.key
    cluster = dns_name(key.cluster_inst_key.cluster_key.name, key.cluster_inst_key.developer)
    return f"/{cluster}/{dns_name(key.app_key.name, key.app_key.version)}/p{port}"


async def release_ports(tx: Writer, inst: Any) -> None:
    """Give back the root LB ports ``inst`` holds (those of a shared ClusterInst)."""
    cluster = await load(tx, k.CLUSTER_INST, inst.key.cluster_inst_key)
    if cluster is None or cluster.ip_access != IA.IP_ACCESS_SHARED:
        return
    refs = await load(tx, k.CLOUDLET_REFS, inst.key.cluster_inst_key.cloudlet_key)
    if refs is None:
        return
    for port in inst.mapped_ports:
        bit = _BITS.get(port.proto)
        if bit is None or port.public_port not in refs.root_lb_ports:
            continue
        left = refs.root_lb_ports[port.public_port] & ~bit
        if left:
            refs.root_lb_ports[port.public_port] = left
        else:
            del refs.root_lb_ports[port.public_port]
    await put(tx, k.CLOUDLET_REFS, refs)
