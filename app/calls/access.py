"""Who may call an API's methods, as the API says it: the exceptions to the rule every API
follows (see :mod:`app.auth.policy`), written beside each API's servicers and combined by the
server into one policy. Names are full service names (``pkg.Service``) and full method names
(``pkg.Service.Method``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class AccessRules:
    """One API's exceptions to the name rule of :mod:`app.auth.policy`."""

    # Callable without a token (a login, a health check).
    public_methods: frozenset[str] = frozenset()
    public_services: frozenset[str] = frozenset()
    # Callable by any signed-in account, whatever its role (a logout).
    signed_in_methods: frozenset[str] = frozenset()
    # Only an admin may call these (internal accounting, injection, sync protocols).
    admin_only_services: frozenset[str] = frozenset()
    admin_only_methods: frozenset[str] = frozenset()
    # What a ``node`` account (a node agent) may call: nothing else.
    node_services: frozenset[str] = frozenset()
    # Read-only whatever their method names (a viewer may call them).
    read_only_services: frozenset[str] = frozenset()

    @classmethod
    def combined(cls, rules: Iterable[AccessRules]) -> AccessRules:
        """The exceptions of several APIs together."""
        found: dict[str, frozenset[str]] = {f.name: frozenset() for f in fields(cls)}
        for one in rules:
            for name in found:
                found[name] |= getattr(one, name)
        return cls(**found)

    def names(self) -> frozenset[str]:
        """Every service and method these rules name (each must be one the server serves)."""
        return frozenset().union(*(getattr(self, f.name) for f in fields(self)))
