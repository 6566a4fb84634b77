"""Roles by policy: ``PORTICO_POLICY_FILE``, a YAML file saying which roles may call which
methods, instead of the name rule (``Get*``/``List*``/... read-only) for the methods it names.

::

    rules:
      - methods: [cnct.kaas.api.Cluster.GetCluster, "cnct.kaas.api.Cluster/List*"]
        roles: [viewer, operator, admin]
      - service: inventory.v1.Warehouse      # per service: methods are its methods' names
        methods: ["Count*", Audit]
        roles: [viewer, operator, admin]
      - methods: ["inventory.v1.*"]          # a glob of full names
        roles: [operator, admin]

A method takes the roles of the first rule that names it, and only those (``admin`` is not
implied); a method no rule names keeps the name rule. What an API makes public or open to every
signed-in account (``Login``, ``Logout``, health, reflection) stays so: a policy file decides
only who of the signed-in may call a method. It is checked once the methods served are known:
a name no method has, a glob matching none, or a role Portico does not have stops the start
with one line naming it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from app.calls.callers import Role
from app.settings.setting_rules import ConfigurationError

VARIABLE = "PORTICO_POLICY_FILE"
MAX_FILE_BYTES = 1024 * 1024
MAX_RULES = 10_000
ROLES = tuple(str(role) for role in Role)
_GLOB = re.compile(r"[*?\[]")
_NAME = re.compile(r"[A-Za-z0-9_.*?\[\]!-]+")


@dataclass(frozen=True)
class PolicyRule:
    """One rule: the full method names or globs it names, and the roles that may call them."""

    number: int  # 1-based, in the file
    patterns: tuple[str, ...]
    roles: frozenset[str]

    def matches(self, full_method: str) -> bool:
        return any(fnmatch.fnmatchcase(full_method, p) for p in self.patterns)


@dataclass(frozen=True)
class PolicyFile:
    """The rules of a policy file, in its order."""

    path: str
    rules: tuple[PolicyRule, ...]

    def rule_for(self, full_method: str) -> PolicyRule | None:
        """The first rule naming ``full_method`` (``pkg.Service.Method``), if any."""
        return next((rule for rule in self.rules if rule.matches(full_method)), None)

    def check(self, served: Iterable[str]) -> None:
        """Every name is a served method and every glob matches one; ConfigurationError naming
        the first that does not (a misspelt name would leave its method under the name rule)."""
        methods = set(served)
        for rule in self.rules:
            for pattern in rule.patterns:
                if _GLOB.search(pattern):
                    if not any(fnmatch.fnmatchcase(m, pattern) for m in methods):
                        self._refuse(rule, f"{pattern!r} matches no served method")
                elif pattern not in methods:
                    self._refuse(rule, f"{pattern!r} is not a served method")

    def _refuse(self, rule: PolicyRule, problem: str) -> None:
        raise ConfigurationError(f"{VARIABLE}: {self.path}: rule {rule.number}: {problem}")


def load(path: str) -> PolicyFile:
    """The policy file at ``path``; ConfigurationError with one line naming what is wrong."""

    def refuse(problem: str) -> ConfigurationError:
        return ConfigurationError(f"{VARIABLE}: {path}: {problem}")

    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise refuse(f"cannot read it ({exc.strerror})") from None
    if len(data) > MAX_FILE_BYTES:
        raise refuse(f"larger than {MAX_FILE_BYTES} bytes")
    try:
        document = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise refuse(f"not YAML{line}") from None
    if not isinstance(document, dict) or set(document) != {"rules"}:
        raise refuse("allowed: a mapping with one key, rules: a list of rules")
    rules = document["rules"]
    if not isinstance(rules, list) or not 0 < len(rules) <= MAX_RULES:
        raise refuse(f"rules: allowed: a list of 1 to {MAX_RULES} rules")
    return PolicyFile(path, tuple(_rule(n, item, refuse) for n, item in enumerate(rules, 1)))


def _rule(number: int, item: Any, refuse: Any) -> PolicyRule:
    def problem(text: str) -> ConfigurationError:
        return refuse(f"rule {number}: {text}")

    if not isinstance(item, dict) or not set(item) <= {"service", "methods", "roles"}:
        raise problem("allowed keys: service (optional), methods, roles")
    methods = item.get("methods")
    methods = [methods] if isinstance(methods, str) else methods
    if not isinstance(methods, list) or not methods or not all(_is_name(m) for m in methods):
        raise problem("methods: allowed: a list of full method names or globs")
    service = item.get("service")
    if service is not None and not (_is_name(service) and not _GLOB.search(service)):
        raise problem("service: allowed: a full service name such as pkg.v1.Service")
    roles = item.get("roles")
    roles = [roles] if isinstance(roles, str) else roles
    if not isinstance(roles, list) or not roles:
        raise problem(f"roles: allowed: a list of {', '.join(ROLES)}")
    for role in roles:
        if role not in ROLES:
            raise problem(f"unknown role {role!r}; allowed: {', '.join(ROLES)}")
    patterns = tuple(_full_name(m, service) for m in methods)
    return PolicyRule(number, patterns, frozenset(roles))


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(_NAME.fullmatch(value.strip("/").replace("/", ".")))


def _full_name(method: str, service: str | None) -> str:
    """``pkg.Service/Method``, ``/pkg.Service/Method`` or (with ``service``) ``Method`` as
    ``pkg.Service.Method``."""
    name = method.strip("/").replace("/", ".")
    return f"{service}.{name}" if service else name


def load_if_set(path: str) -> PolicyFile | None:
    """The policy file of ``PORTICO_POLICY_FILE``, None when it is empty."""
    return load(path) if path else None


def effective_table(policy: Any, methods: Iterable[str]) -> list[tuple[str, str, str]]:
    """(method, who may call it, why) for each method, as ``policy`` decides now."""
    rows = []
    for name in sorted(methods):
        access = policy.access(name).value
        if access != "roles":
            rows.append((name, access.replace("_", "-"), "the API's rule"))
            continue
        roles = [role for role in ROLES if policy.allows(role, name)]
        rule = policy.file.rule_for(name) if policy.file is not None else None
        why = f"{Path(policy.file.path).name} rule {rule.number}" if rule else "name rule"
        rows.append((name, ",".join(roles) or "nobody", why))
    return rows
