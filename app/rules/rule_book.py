"""A book of field rules: what each API says its request fields may hold.

Every API writes its own book beside its servicers (``app/services/<api>/field_rules.py``);
the server combines them into one (:meth:`RuleBook.combined`) and hands it to the two readers:
the checks every request passes before its servicer (:mod:`app.rules.field_checks`) and the
OpenAPI document, which publishes the same rules as JSON Schema.

Two tables:

- ``fields``, by full field name: what the field holds wherever its message appears, in any
  request. A rule applies to a value that is set (proto3 cannot tell an explicit zero, ``""``
  or ``false`` from an absent field: both are "unset"); ``required`` says unset is wrong.
- ``calls``, by full method name: what one RPC additionally needs, by field path in its
  request (``key.name``; a path through a repeated field applies to each element). Edge
  objects, for instance, name every part of their key to be created, but a Show filter may
  leave any out.

A rule JSON Schema cannot say (two labels with one name, a version the server supports, a PEM
certificate) is enforced by the servicer and only described: its ``note`` becomes part of the
field's description.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from app.rules.field_rule import Rule

CallRules = Mapping[str, Mapping[str, Rule]]


@dataclass(frozen=True)
class RuleBook:
    """Field rules by full field name, and one RPC's own rules by full method name."""

    fields: Mapping[str, Rule] = field(default_factory=dict)
    calls: CallRules = field(default_factory=dict)

    @classmethod
    def combined(cls, books: Iterable[RuleBook]) -> RuleBook:
        """One book of several APIs'; a field or method two books rule is a mistake."""
        fields: dict[str, Rule] = {}
        calls: dict[str, Mapping[str, Rule]] = {}
        for book in books:
            for name, rule in book.fields.items():
                if name in fields:
                    raise ValueError(f"two books rule the field {name}")
                fields[name] = rule
            for method, rules in book.calls.items():
                if method in calls:
                    raise ValueError(f"two books rule the method {method}")
                calls[method] = MappingProxyType(dict(rules))
        return cls(MappingProxyType(fields), MappingProxyType(calls))

    def field_rule(self, full_name: str) -> Rule | None:
        """The rule of a field wherever it appears, if any."""
        return self.fields.get(full_name)

    def call_rules(self, method: str) -> Mapping[str, Rule]:
        """The rules of one RPC (``pkg.Service.Method``), by field path in its request."""
        return self.calls.get(method, _NONE)


_NONE: Mapping[str, Rule] = MappingProxyType({})
