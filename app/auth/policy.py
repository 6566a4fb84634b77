"""Who may call which RPC: derived from method names, with the exceptions each API declares
(:class:`~app.calls.access.AccessRules`, beside its servicers).

- public: what an API names public (``Login``, ``CheckToken``), and gRPC health and reflection;
- ``admin``: everything;
- ``operator``: everything but what an API names admin-only;
- ``viewer``: read-only RPCs — names starting ``Get``, ``List``, ``Show`` or ``Inspect`` (which
  covers ``GetLogs``, ``ListenEvents`` and ``GetInfo``) and the services an API names read-only;
- ``node``: the services an API names for node accounts (the scheduler's ``NodeService`` and the
  read-only runtime API, which ``portico node-agent`` follows);
- every signed-in account may call what an API names so (``Logout``).

A new RPC is covered by these rules the moment it is added to a .proto; a service no API
declares anything of (a proxied upstream's) follows the name rule alone. A policy file
(``PORTICO_POLICY_FILE``, :mod:`app.auth.policy_file`) names the roles of the methods it names
instead.
"""

from __future__ import annotations

from enum import Enum

from app.auth.policy_file import PolicyFile
from app.calls.access import AccessRules
from app.calls.callers import Role

READ_ONLY_PREFIXES = ("Get", "List", "Show", "Inspect")
# gRPC's own health and reflection services, public wherever they are served.
GRPC_STANDARD = AccessRules(
    public_services=frozenset(
        {
            "grpc.health.v1.Health",
            "grpc.reflection.v1alpha.ServerReflection",
            "grpc.reflection.v1.ServerReflection",
        }
    )
)


class Access(Enum):
    PUBLIC = "public"  # no token needed
    SIGNED_IN = "signed_in"  # any valid token
    ROLES = "roles"  # a valid token with one of the allowed roles


def split(full_method: str) -> tuple[str, str]:
    """``pkg.Service.Method`` or ``/pkg.Service/Method`` → (``pkg.Service``, ``Method``)."""
    name = full_method.strip("/").replace("/", ".")
    service, _, method = name.rpartition(".")
    return service, method


class Policy:
    """The decisions of the name rule and ``rules``; each remembered, as a decision depends
    only on the role and the method's name, and both sets are small."""

    def __init__(self, rules: AccessRules | None = None, file: PolicyFile | None = None) -> None:
        self.rules = AccessRules.combined((GRPC_STANDARD, rules or AccessRules()))
        # The roles of the methods a policy file names, instead of the name rule's.
        self.file = file
        self._access: dict[str, Access] = {}
        self._allows: dict[tuple[str, str], bool] = {}

    def access(self, full_method: str) -> Access:
        """How much a caller must prove to reach ``full_method``."""
        found = self._access.get(full_method)
        if found is None:
            found = self._access[full_method] = self._level(full_method)
        return found

    def allows(self, role: str, full_method: str) -> bool:
        """Whether an account with ``role`` may call ``full_method``."""
        key = (role, full_method)
        found = self._allows.get(key)
        if found is None:
            found = self._allows[key] = self._allowed(role, full_method)
        return found

    def is_public(self, full_method: str) -> bool:
        """Whether anyone may call ``full_method`` without a token."""
        return self.access(full_method) is Access.PUBLIC

    def is_read_only(self, full_method: str) -> bool:
        """Whether the RPC only reads, judged by its name (and the API's read-only services)."""
        service, method = split(full_method)
        return service in self.rules.read_only_services or method.startswith(READ_ONLY_PREFIXES)

    def is_admin_only(self, full_method: str) -> bool:
        """The RPCs only an admin may call."""
        service, method = split(full_method)
        return (
            service in self.rules.admin_only_services
            or f"{service}.{method}" in self.rules.admin_only_methods
        )

    def _level(self, full_method: str) -> Access:
        service, method = split(full_method)
        name = f"{service}.{method}"
        if name in self.rules.public_methods or service in self.rules.public_services:
            return Access.PUBLIC
        if name in self.rules.signed_in_methods:
            return Access.SIGNED_IN
        return Access.ROLES

    def _allowed(self, role: str, full_method: str) -> bool:
        if self.access(full_method) is not Access.ROLES:
            return True
        service, method = split(full_method)
        if self.file is not None:
            rule = self.file.rule_for(f"{service}.{method}")
            if rule is not None:
                return role in rule.roles
        if role == Role.ADMIN:
            return True
        if role == Role.NODE:
            return service in self.rules.node_services
        if self.is_admin_only(full_method):
            return False
        if role == Role.OPERATOR:
            return True
        if role == Role.VIEWER:
            return self.is_read_only(full_method)
        return False
