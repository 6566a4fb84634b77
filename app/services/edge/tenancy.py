"""Which edge objects an account may see and change: tenants bound to an organisation.

The seed says a Developer's objects "cannot be seen or managed by other Developers". An account
may act for one developer organisation (``portico users add alice --role operator --developer
AcmeApps``) or one operator organisation (``--operator "Acme Telecom"``). Its role still decides
which RPCs it may call at all (the gate); this decides on which objects::

    objects                        developer account           operator account
    Developer, App                 its own                     none
    ClusterInst(Info), ClusterRefs its own (key.developer)     on its Cloudlets, read-only
    AppInst(Info), exec, metrics   its own (the App's owner)   on its Cloudlets, read-only
    Operator, Cloudlet(Info/Refs)  read-only                   its own
    Cluster                        all (shared definitions)    read-only
    Flavor, Controller, Node       read-only                   read-only

Show streams only what the account may see; a write to anything else is PERMISSION_DENIED
naming both organisations. Accounts bound to nothing keep the global view. Whatever the
binding, a request with a ``crm_override`` needs an admin account.

The servicers apply it in one place (:mod:`~app.services.edge.service`'s generic wrappers),
from the caller the gate put in the call's context, so both transports behave the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message

import app.services.edge.kinds as k
from app.calls.callers import Role, current_caller
from app.services.status import Rejected

Owner = Callable[[Any], str]  # of a key message


def _cloudlet_operator(key: Any) -> str:
    return key.cloudlet_key.operator_key.name


DEVELOPER_OF: dict[str, Owner] = {
    k.DEVELOPER.name: lambda key: key.name,
    k.APP.name: lambda key: key.developer_key.name,
    k.CLUSTER_INST.name: lambda key: key.developer,
    k.CLUSTER_INST_INFO.name: lambda key: key.developer,
    k.CLUSTER_REFS.name: lambda key: key.developer,
    k.APP_INST.name: lambda key: key.app_key.developer_key.name,
    k.APP_INST_INFO.name: lambda key: key.app_key.developer_key.name,
}
OPERATOR_OF: dict[str, Owner] = {
    k.OPERATOR.name: lambda key: key.name,
    k.CLOUDLET.name: lambda key: key.operator_key.name,
    k.CLOUDLET_INFO.name: lambda key: key.operator_key.name,
    k.CLOUDLET_REFS.name: lambda key: key.operator_key.name,
    k.CLUSTER_INST.name: _cloudlet_operator,
    k.CLUSTER_INST_INFO.name: _cloudlet_operator,
    k.CLUSTER_REFS.name: _cloudlet_operator,
    k.APP_INST.name: lambda key: _cloudlet_operator(key.cluster_inst_key),
    k.APP_INST_INFO.name: lambda key: _cloudlet_operator(key.cluster_inst_key),
}
# What a developer account may write besides its own objects.
DEVELOPER_SHARED_WRITES = frozenset({k.CLUSTER.name})
OPERATOR_WRITES = frozenset({k.OPERATOR.name, k.CLOUDLET.name, k.CLOUDLET_INFO.name})


@dataclass(frozen=True)
class Tenant:
    """The organisation a call acts for (both empty: the global view)."""

    developer: str = ""
    operator: str = ""
    admin: bool = True

    @classmethod
    def of_caller(cls) -> Tenant:
        """The tenant of the current call, from the identity the gate admitted."""
        caller = current_caller.get()
        if caller is None:
            return cls()
        return cls(caller.developer, caller.operator, caller.role == Role.ADMIN)

    def check_override(self, request: Message) -> None:
        """``crm_override`` is for administrators (the seed: "only be used by administrators")."""
        if getattr(request, "crm_override", 0) and not self.admin:
            raise Rejected(
                grpc.StatusCode.PERMISSION_DENIED,
                "crm_override: only an admin account may override the CRM",
            )

    @property
    def bound(self) -> bool:
        return bool(self.developer or self.operator)

    def may_see(self, kind: k.EdgeType, key: Message) -> bool:
        """Whether the object with ``key`` shows in this tenant's Show streams."""
        if self.developer:
            owner = DEVELOPER_OF.get(kind.name)
            return owner is None or owner(key) == self.developer
        if self.operator:
            owner = OPERATOR_OF.get(kind.name)
            if owner is not None:
                return owner(key) == self.operator
            return kind.name not in DEVELOPER_OF
        return True

    def check_write(self, kind: k.EdgeType, key: Message) -> None:
        """PERMISSION_DENIED unless this tenant may create, change or delete ``key``."""
        if not self.bound:
            return
        if self.developer:
            owner = DEVELOPER_OF.get(kind.name)
            if owner is None and kind.name in DEVELOPER_SHARED_WRITES:
                return
            theirs = owner(key) if owner is not None else ""
            if owner is not None and theirs == self.developer:
                return
            mine = f"developer {self.developer!r}"
        else:
            owner = OPERATOR_OF.get(kind.name)
            theirs = owner(key) if owner is not None else ""
            if kind.name in OPERATOR_WRITES and theirs == self.operator:
                return
            mine = f"operator {self.operator!r}"
        whose = f" of {theirs!r}" if theirs else ""
        raise Rejected(
            grpc.StatusCode.PERMISSION_DENIED,
            f"this account acts for {mine}: it may not change {kind.name} "
            f"{k.key_string(key)}{whose}",
        )
