"""What the runtime API's request fields may hold (see :mod:`app.rules.rule_book`)."""

from __future__ import annotations

from dataclasses import replace

from app.rules.field_rule import Rule
from app.rules.named_rules import NOT_NEGATIVE, REQUIRED
from app.rules.rule_book import RuleBook
from app.settings.limits import MAX_FILTERS

RULES = RuleBook(
    fields={
        "v1alpha.ListPodsRequest.filters": Rule(max_items=MAX_FILTERS),
        "v1alpha.ListImagesRequest.filters": Rule(max_items=MAX_FILTERS),
        "v1alpha.EventFilter.since_time": NOT_NEGATIVE,
        "v1alpha.EventFilter.until_time": replace(
            NOT_NEGATIVE, note="After `since_time` when both are set."
        ),
        "v1alpha.GetLogsRequest.since_time": NOT_NEGATIVE,
        "v1alpha.GetLogsRequest.until_time": replace(
            NOT_NEGATIVE, note="After `since_time` when both are set."
        ),
        "v1alpha.GetLogsRequest.lines": NOT_NEGATIVE,
    },
    calls={
        "v1alpha.PublicAPI.InspectPod": {"id": REQUIRED},
        "v1alpha.PublicAPI.InspectImage": {"id": REQUIRED},
        "v1alpha.PublicAPI.GetLogs": {"pod_id": REQUIRED},
    },
)
