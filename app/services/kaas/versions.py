"""Kubernetes versions: which upgrades the version-skew policy allows.

A cluster may move to a supported version that is newer than its own and at most one minor
version ahead (a patch release of its own minor, or any release of the next minor).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")


def parse_version(version: str) -> tuple[int, int, int] | None:
    """``(major, minor, patch)`` of ``1.31.2`` (or ``v1.31.2``); None if it is not one."""
    match = _VERSION.match(version)
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def upgrade_targets(current: str, supported: Iterable[str]) -> list[str]:
    """Supported versions newer than ``current`` and at most one minor ahead, oldest first."""
    mine = parse_version(current)
    if mine is None:
        return []
    targets = []
    for version in supported:
        theirs = parse_version(version)
        if theirs is None or theirs <= mine:
            continue
        if theirs[0] == mine[0] and theirs[1] <= mine[1] + 1:
            targets.append((theirs, version))
    return [version for _, version in sorted(targets)]
