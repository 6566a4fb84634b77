"""Checks of scheduler requests: every problem of a request is reported at once, by field.

Instance ids and names follow what the original controller sent: it picks ids itself
(``<workload>-<random>``) and names workloads in mixed case. Both are 1-63 characters of letters,
digits, ``-``, ``_`` and ``.``, starting and ending with a letter or digit: safe in a URL path
segment, a log line and a cgroup name. An empty id asks the scheduler for one (a UUID).
"""

from __future__ import annotations

import re

from app.limits import MAX_PORTS_PER_INSTANCE
from app.services.kudo.images import InvalidReference, parse_reference
from app.services.status import Violations
from gen.scheduler import scheduler_pb2 as pb

_IDENTIFIER = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
MAX_IDENTIFIER = 63
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
MAX_ENVIRONMENT = 256


def instance_violations(instance: pb.Instance) -> Violations:
    """What is wrong with an ``Instance`` given to ``Create`` (empty when it is fine)."""
    found = Violations()
    if instance.id:
        _check_identifier(found, "id", instance.id)
    if instance.name:
        _check_identifier(found, "name", instance.name)
    else:
        found.add("name", "is required")
    found.check(instance.type in pb.Type.values(), "type", f"unknown instance type {instance.type}")
    try:
        parse_reference(instance.uri)
    except InvalidReference as exc:
        found.add("uri", str(exc))
    limit = instance.resource.limit
    for dimension in ("cpu", "memory", "disk"):
        value = getattr(limit, dimension)
        found.check(
            value > 0, f"resource.limit.{dimension}", f"must be greater than 0 (got {value})"
        )
    found.check(
        len(instance.ports) <= MAX_PORTS_PER_INSTANCE,
        "ports",
        f"at most {MAX_PORTS_PER_INSTANCE} ports",
    )
    sources: dict[int, int] = {}
    for index, port in enumerate(instance.ports):
        for end in ("source", "destination"):
            value = getattr(port, end)
            found.check(
                1 <= value <= 65535, f"ports[{index}].{end}", f"must be 1-65535 (got {value})"
            )
        if port.source in sources:
            found.add(
                f"ports[{index}].source",
                f"port {port.source} is already used by ports[{sources[port.source]}]",
            )
        sources.setdefault(port.source, index)
    found.check(
        len(instance.environnement) <= MAX_ENVIRONMENT,
        "environnement",
        f"at most {MAX_ENVIRONMENT} variables",
    )
    for index, variable in enumerate(instance.environnement):
        found.check(
            bool(_ENV.match(variable)),
            f"environnement[{index}]",
            "must be NAME=value with NAME of letters, digits and _ (not starting with a digit)",
        )
    return found


def _check_identifier(found: Violations, path: str, value: str) -> None:
    found.check(
        len(value) <= MAX_IDENTIFIER and bool(_IDENTIFIER.match(value)),
        path,
        f"{value[:80]!r} must be 1-{MAX_IDENTIFIER} letters, digits, '-', '_' or '.', "
        "starting and ending with a letter or digit",
    )
