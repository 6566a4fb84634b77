"""Checks of scheduler requests: every problem of a request is reported at once, by field.

The rules of single fields (identifiers, the image reference, ports 1-65535, at most 64 ports,
``NAME=value`` variables, positive resource limits) are in :mod:`app.services.kudo.field_rules`,
which the OpenAPI document also reads; ports used twice are checked here.

Instance ids and names follow what the original controller sent: it picks ids itself
(``<workload>-<random>``) and names workloads in mixed case. Both are 1-63 characters of letters,
digits, ``-``, ``_`` and ``.``, starting and ending with a letter or digit: safe in a URL path
segment, a log line and a cgroup name. An empty id asks the scheduler for one (a UUID).
"""

from __future__ import annotations

from app.rules.field_checks import FieldChecks
from app.services.checked import rule_violations
from app.services.kudo.field_rules import RULES
from app.services.status import Violations
from gen.scheduler import scheduler_pb2 as pb

CREATE = "scheduler.InstanceService.Create"
# The API's own rules, applied where a request's validation reports them with its own.
CHECKS = FieldChecks(RULES)


def instance_violations(instance: pb.Instance) -> Violations:
    """What is wrong with an ``Instance`` given to ``Create`` (empty when it is fine)."""
    found = rule_violations(CHECKS, instance, CREATE)
    # Refused whatever the unknown-input setting: the scheduler cannot run an unknown type.
    found.check(instance.type in pb.Type.values(), "type", f"unknown instance type {instance.type}")
    sources: dict[int, int] = {}
    for index, port in enumerate(instance.ports):
        if port.source in sources:
            found.add(
                f"ports[{index}].source",
                f"port {port.source} is already used by ports[{sources[port.source]}]",
            )
        sources.setdefault(port.source, index)
    return found
