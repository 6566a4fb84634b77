"""The simulation's only source of variation: numbers fixed by what they are about.

Hashing the subject (a seed, a machine, a time window) instead of drawing random numbers keeps
every simulated fact reproducible: the same inputs give the same machine failures, outages and
crashes on every run and after every restart.
"""

from __future__ import annotations

import hashlib


def digest(*parts: object) -> bytes:
    """A SHA-256 digest of ``parts``."""
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()


def unit_interval(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts``."""
    return int.from_bytes(digest(*parts)[:8], "big") / 2**64
