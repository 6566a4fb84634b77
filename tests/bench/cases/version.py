"""(a): an authenticated ``GET /api/v1/version`` (no store access) with 1,000 distinct tokens in
turn; with one token, and without metrics, it is measured in ``compared``."""

from __future__ import annotations

from typing import Any

from tests.bench import wrk
from tests.bench.cases import Bench, Case

PATH = "/api/v1/version"
TOKENS = 1_000


def many_tokens(bench: Bench) -> dict[str, Any]:
    """Each request carries the next of 1,000 tokens: the verified-token cache sees each one a
    few times a second, and rechecks each against the store once a second."""
    script = wrk.rotate_script([PATH], bench.portico.tokens(TOKENS))
    return bench.wrk(PATH, script) | {"tokens": TOKENS}


CASES = [
    Case("a_tokens", f"(a) with {TOKENS:,} distinct tokens", "main", many_tokens),
]
