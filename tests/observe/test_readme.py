"""The metrics page's table lists exactly the metrics Portico exports, named by convention."""

from __future__ import annotations

import json
import re

from prometheus_client import Counter, Histogram
from prometheus_client.metrics import MetricWrapperBase

from app.observe import metrics
from tests.conftest import ROOT

METRICS_PAGE = ROOT / "docs" / "operations" / "metrics.md"


def _exported() -> set[str]:
    names = set()
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            name = value.describe()[0].name
            names.add(f"{name}_total" if isinstance(value, Counter) else name)
    return names


def test_every_metric_is_in_the_docs_and_the_docs_name_no_other():
    readme = METRICS_PAGE.read_text()
    listed = set(re.findall(r"^\| `(portico_[a-z_]+)` \|", readme, flags=re.MULTILINE))
    assert listed == _exported()


def test_metric_names_follow_the_prometheus_conventions():
    for value in vars(metrics).values():
        if isinstance(value, Histogram):
            assert value.describe()[0].name.endswith("_seconds"), "durations are in seconds"
    assert all(re.fullmatch(r"portico_[a-z]+(_[a-z]+)*", name) for name in _exported())


def test_the_grafana_dashboard_shows_the_documented_panels_over_exported_metrics():
    dashboard = json.loads((ROOT / "docs" / "grafana" / "portico.json").read_text())
    readme = METRICS_PAGE.read_text()
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    assert len(exprs) == 3
    for expr in exprs:
        # The metrics page shows the same query (its error ratio on two lines).
        assert " ".join(expr.split()) in " ".join(readme.split())
        used = set(re.findall(r"portico_[a-z_]+", expr))
        assert used, expr
        for name in used:
            assert name.removesuffix("_bucket") in _exported(), name
