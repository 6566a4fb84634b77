"""Who may call which RPC: derived from method names plus a short list of exceptions.

- public: ``Login`` and ``CheckToken`` (and the gRPC health and reflection services);
- ``admin``: everything;
- ``operator``: everything but the admin-only RPCs;
- ``viewer``: read-only RPCs — names starting ``Get``, ``List``, ``Show`` or ``Inspect`` (which
  covers ``GetLogs``, ``ListenEvents`` and ``GetInfo``) and all of the storage statistics;
- ``node``: the scheduler's ``NodeService`` (which lets a node account act only for the node
  named like it), and the read-only runtime API ``v1alpha.PublicAPI``, where a node account
  sees only its own node's pods: what ``portico node-agent`` follows;
- every signed-in account may ``Logout``.

A new RPC is covered by these rules the moment it is added to a .proto.
"""

from __future__ import annotations

import functools
from enum import Enum

from app.calls.callers import Role


class Access(Enum):
    PUBLIC = "public"  # no token needed
    SIGNED_IN = "signed_in"  # any valid token
    ROLES = "roles"  # a valid token with one of the allowed roles


PUBLIC_METHODS = frozenset(
    {"services.auth.AuthService.Login", "services.auth.AuthService.CheckToken"}
)
PUBLIC_SERVICES = frozenset(
    {
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
        "grpc.reflection.v1.ServerReflection",
    }
)
SIGNED_IN_METHODS = frozenset({"services.auth.AuthService.Logout"})
ADMIN_ONLY_SERVICES = frozenset(
    {"edgeproto.CloudletRefsApi", "edgeproto.ClusterRefsApi", "edgeproto.NotifyApi"}
)
ADMIN_ONLY_METHODS = frozenset(
    {
        "edgeproto.CloudletInfoApi.InjectCloudletInfo",
        "edgeproto.CloudletInfoApi.EvictCloudletInfo",
    }
)
NODE_SERVICES = frozenset({"scheduler.NodeService", "v1alpha.PublicAPI"})
READ_ONLY_SERVICES = frozenset({"stats.StatsService"})
READ_ONLY_PREFIXES = ("Get", "List", "Show", "Inspect")


@functools.cache
def split(full_method: str) -> tuple[str, str]:
    """``pkg.Service.Method`` or ``/pkg.Service/Method`` → (``pkg.Service``, ``Method``)."""
    name = full_method.strip("/").replace("/", ".")
    service, _, method = name.rpartition(".")
    return service, method


@functools.cache
def access(full_method: str) -> Access:
    """How much a caller must prove to reach ``full_method``."""
    service, method = split(full_method)
    if f"{service}.{method}" in PUBLIC_METHODS or service in PUBLIC_SERVICES:
        return Access.PUBLIC
    if f"{service}.{method}" in SIGNED_IN_METHODS:
        return Access.SIGNED_IN
    return Access.ROLES


def is_read_only(full_method: str) -> bool:
    """Whether the RPC only reads, judged by its name (and the statistics service)."""
    service, method = split(full_method)
    return service in READ_ONLY_SERVICES or method.startswith(READ_ONLY_PREFIXES)


def is_admin_only(full_method: str) -> bool:
    """The RPCs only an admin may call (internal accounting, injection, the sync protocol)."""
    service, method = split(full_method)
    return service in ADMIN_ONLY_SERVICES or f"{service}.{method}" in ADMIN_ONLY_METHODS


# Cached: a decision depends only on the role and the method name, and both sets are small.
@functools.cache
def allows(role: str, full_method: str) -> bool:
    """Whether an account with ``role`` may call ``full_method``."""
    level = access(full_method)
    if level is not Access.ROLES:
        return True
    service, _ = split(full_method)
    if role == Role.ADMIN:
        return True
    if role == Role.NODE:
        return service in NODE_SERVICES
    if is_admin_only(full_method):
        return False
    if role == Role.OPERATOR:
        return True
    if role == Role.VIEWER:
        return is_read_only(full_method)
    return False
