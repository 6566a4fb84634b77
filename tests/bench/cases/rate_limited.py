"""The cost of per-caller rate limits when on and not limiting: (a) on the main server (no
limit) and on a server whose limit no caller reaches (a million calls a second), in turns
(:meth:`Bench.compare`), so both rows share the machine's slow and quick moments. Every call
of the limited row takes a token from its caller's bucket; the store is written once per share
(a tenth of a second of the rate). The rows differ by a few percent at most, less than the
machine's drift between turns, so they have three times the run length in turns."""

from __future__ import annotations

from typing import Any

from tests.bench.cases import WARM_OBJECTS, Bench, Case, Target
from tests.bench.cases.version import PATH
from tests.bench.servers import portico

MEASURED_RUNS = 3  # run lengths in turns (see the module's docstring)
# Far above what one server answers: every call passes, and each one is counted.
UNREACHED = {"PORTICO_RATE_LIMIT_PER_SECOND": "1000000", "PORTICO_RATE_LIMIT_BURST": "1000000"}
ROWS = (
    ("a_version_unlimited", "(a) without a rate limit"),
    ("a_version_rate_limited", "(a) with a rate limit it never reaches"),
)


def rate_limited(bench: Bench) -> dict[str, Any]:
    main = bench.portico
    with portico(bench.processes, bench.workers, seed=WARM_OBJECTS, env=UNREACHED) as limited:
        return bench.compare(
            {
                "a_version_unlimited": Target(main.http, PATH, main.token),
                "a_version_rate_limited": Target(limited.http, PATH, limited.token),
            },
            seconds=MEASURED_RUNS * bench.seconds,
        )


CASES = [Case("rate_limited", "(a) with and without a rate limit", "main", rate_limited, rows=ROWS)]
