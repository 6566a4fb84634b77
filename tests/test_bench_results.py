"""The README's benchmark and replica sections are the committed runs (tests/bench/results.json,
tests/scale/results.json), and the text around them states no measurement of its own, so every
number in the docs is one a script printed, not typed in."""

from __future__ import annotations

import json
import re

from app.store.objects import POSTGRESQL_POLL_INTERVAL, SQLITE_POLL_INTERVAL
from tests.bench import run as bench
from tests.bench.report import README
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


def test_readme_benchmark_section_is_the_committed_run():
    readme = README.read_text()
    assert bench.readme_with(readme, _results("bench")) == readme, (
        "README.md's benchmark section differs from tests/bench/results.json: run "
        "python -m tests.bench.run --out tests/bench/results.json --readme"
    )


def test_readme_replica_section_is_the_committed_run():
    readme = README.read_text()
    assert scale.readme_with(readme, _results("scale")) == readme, (
        "README.md's replica section differs from tests/scale/results.json: run "
        "python -m tests.scale.run --out tests/scale/results.json --readme"
    )


def _prose(section: str) -> str:
    """A README section's own text: without its generated block and its code blocks."""
    text = README.read_text()
    body = text[text.index(section) :]
    body = body[: body.index("\n## ", 1)] if "\n## " in body[1:] else body
    body = re.sub(r"<!-- (\S+):begin -->.*?<!-- \1:end -->", "", body, flags=re.S)
    return re.sub(r"```.*?```", "", body, flags=re.S)


def test_performance_and_replica_prose_state_no_measurement():
    for section in ("## Performance\n", "### Running several replicas\n"):
        found = set(MEASUREMENT.findall(_prose(section))) - SETTINGS
        assert not found, f"{section.strip()} states {sorted(found)}: only results files may"


def test_the_results_say_where_and_how_they_were_measured():
    for folder in ("bench", "scale"):
        machine = _results(folder)["machine"]
        assert machine["processor"] and machine["cpus"] and machine["kernel"], folder
