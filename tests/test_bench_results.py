"""The performance and replica pages' tables are the committed runs (tests/bench/results.json,
tests/scale/results.json), and the text around them states no measurement of its own, so every
number in the docs is one a script printed, not typed in."""

from __future__ import annotations

import json
import re

from app.store.objects import POSTGRESQL_POLL_INTERVAL, SQLITE_POLL_INTERVAL
from tests.bench import run as bench
from tests.conftest import ROOT
from tests.scale import run as scale

# What a measurement looks like in prose.
MEASUREMENT = re.compile(
    r"\d[\d,.]*\s*(?:µs|us|ms|req/s|MiB|%)"  # a time, rate, size or share
    r"|(?<!/)\b\d+\.\d+\b"  # a ratio (not a version such as HTTP/1.1)
    r"|\d+(?:\.\d+)?x\b"  # a multiple
)
# Numbers the text may state because they are settings, each the code's own value.
# The log head poll of other workers (SQLite) and replicas (PostgreSQL).
SETTINGS = {
    f"{interval * 1000:.0f} ms" for interval in (SQLITE_POLL_INTERVAL, POSTGRESQL_POLL_INTERVAL)
}


def _results(folder: str) -> dict:
    return json.loads((ROOT / "tests" / folder / "results.json").read_text())


def test_the_performance_page_is_the_committed_run():
    page = bench.report.PAGE.read_text()
    assert bench.readme_with(page, _results("bench")) == page, (
        "docs/performance.md differs from tests/bench/results.json: run "
        "python -m tests.bench.run --out tests/bench/results.json --docs"
    )


def test_the_replica_page_is_the_committed_run():
    page = scale.PAGE.read_text()
    assert scale.readme_with(page, _results("scale")) == page, (
        "docs/how-to/replicas.md differs from tests/scale/results.json: run "
        "python -m tests.scale.run --out tests/scale/results.json --docs"
    )


def _prose(text: str) -> str:
    """A page's own text: without its generated block and its code blocks."""
    body = re.sub(r"<!-- (\S+):begin -->.*?<!-- \1:end -->", "", text, flags=re.S)
    return re.sub(r"```.*?```", "", body, flags=re.S)


def test_performance_and_replica_prose_state_no_measurement():
    replicas = scale.PAGE.read_text()
    for name, text in (
        ("Performance", bench.report.PAGE.read_text()),
        ("A production layout", replicas[replicas.index("## A production layout") :]),
    ):
        found = set(MEASUREMENT.findall(_prose(text))) - SETTINGS
        assert not found, f"{name} states {sorted(found)}: only results files may"


def test_the_results_say_where_and_how_they_were_measured():
    for folder in ("bench", "scale"):
        machine = _results(folder)["machine"]
        assert machine["processor"] and machine["cpus"] and machine["kernel"], folder
