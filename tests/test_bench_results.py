"""The README's benchmark table is the committed run's (tests/bench/results.json), so the numbers
in the docs are ones the benchmark printed, not typed in."""

from __future__ import annotations

import json

from tests.bench.report import README
from tests.bench.run import readme_with
from tests.conftest import ROOT


def test_readme_benchmark_table_is_the_committed_run():
    results = json.loads((ROOT / "tests" / "bench" / "results.json").read_text())
    readme = README.read_text()
    assert readme_with(readme, results) == readme, (
        "README.md's benchmark table differs from tests/bench/results.json: run "
        "python -m tests.bench.run --out tests/bench/results.json --readme"
    )
