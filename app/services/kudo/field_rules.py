"""What the scheduler's request fields may hold (see :mod:`app.rules.rule_book`)."""

from __future__ import annotations

from app.rules.field_rule import Rule
from app.rules.named_rules import NOT_NEGATIVE, PORT, REQUIRED
from app.rules.rule_book import RuleBook
from app.rules.text_patterns import IMAGE_REFERENCE, MAX_IMAGE_REFERENCE
from app.settings.limits import MAX_PORTS_PER_INSTANCE

# Instance ids and names: safe in a URL segment, a log line and a cgroup name.
IDENTIFIER = Rule(
    pattern=r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
    says="must be letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
    max_length=63,
)

_SCHEDULER = "scheduler."

RULES = RuleBook(
    fields={
        _SCHEDULER + "Instance.id": IDENTIFIER,
        _SCHEDULER + "Instance.name": IDENTIFIER,
        _SCHEDULER + "Instance.uri": Rule(
            pattern=IMAGE_REFERENCE,
            says="is not an image reference ([docker:// or oci://][registry[:port]/]path[:tag]"
            "[@digest], lower-case path)",
            max_length=MAX_IMAGE_REFERENCE,
        ),
        _SCHEDULER + "Instance.ports": Rule(
            max_items=MAX_PORTS_PER_INSTANCE, note="No two ports have the same source."
        ),
        _SCHEDULER + "Instance.environnement": Rule(
            pattern=r"^[A-Za-z_][A-Za-z0-9_]*=",
            says="must be NAME=value with NAME of letters, digits and _ (not starting with a "
            "digit)",
            max_items=256,
        ),
        _SCHEDULER + "Port.source": PORT,
        _SCHEDULER + "Port.destination": PORT,
        **{_SCHEDULER + f"ResourceSummary.{d}": NOT_NEGATIVE for d in ("cpu", "memory", "disk")},
        _SCHEDULER + "NodeRegisterRequest.certificate": Rule(
            note="Required unless the call presents a TLS client certificate: a PEM X.509 "
            "certificate whose CN is the node id, or the node id."
        ),
    },
    calls={
        _SCHEDULER + "InstanceService.Create": {
            "name": REQUIRED,
            "uri": REQUIRED,
            **{f"resource.limit.{d}": REQUIRED for d in ("cpu", "memory", "disk")},
        },
        **{
            f"{_SCHEDULER}InstanceService.{m}": {"id": REQUIRED}
            for m in ("Start", "Stop", "Destroy")
        },
        _SCHEDULER + "NodeService.Unregister": {"id": REQUIRED},
        _SCHEDULER + "NodeService.Status": {"id": REQUIRED},
    },
)
