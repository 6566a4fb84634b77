"""Did you mean: the names closest to one a caller got wrong, for a refusal to suggest.

One implementation for every place that names a mistake (an unknown route, field, method,
service or setting), on the gateway's error paths as in the command line. Its cost is bounded
whatever the caller sends: a name too long to be a slip of the keyboard gets no suggestion, and
only so many candidates are compared.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable, Iterable, Sequence

MAX_NAME_CHARS = 128  # longer than any name of a route segment, field, method or setting
MAX_CANDIDATES = 256  # the first so many are compared; a message's fields, a node's children
CUTOFF = 0.6  # difflib's default: "clustr" finds "cluster", "list" does not find "get"


def close_names(
    name: str, candidates: Iterable[str], n: int = 3, cutoff: float = CUTOFF
) -> list[str]:
    """Up to ``n`` of ``candidates`` close to ``name``, the closest first."""
    if not name or len(name) > MAX_NAME_CHARS:
        return []
    pool = [c for c in itertools.islice(candidates, MAX_CANDIDATES) if len(c) <= MAX_NAME_CHARS]
    return difflib.get_close_matches(name, pool, n=n, cutoff=cutoff)


def did_you_mean(close: Sequence[str], said: Callable[[str], str] = str) -> str:
    """``"; did you mean a or b?"`` for the close names (each written by ``said``), else ``""``."""
    if not close:
        return ""
    return "; did you mean " + " or ".join(said(name) for name in close) + "?"
