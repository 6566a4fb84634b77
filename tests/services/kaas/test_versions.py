"""Upgrade targets follow the Kubernetes version-skew policy: newer, at most one minor ahead."""

from __future__ import annotations

import pytest

from app.services.kaas.versions import parse_version, upgrade_targets

SUPPORTED = ("1.29.10", "1.30.6", "1.31.2", "1.31.4", "1.32.0", "2.0.0")


@pytest.mark.parametrize(
    ("current", "targets"),
    [
        ("1.29.10", ["1.30.6"]),
        ("1.30.6", ["1.31.2", "1.31.4"]),
        ("1.31.2", ["1.31.4", "1.32.0"]),  # a patch release of its own minor counts
        ("1.32.0", []),  # 2.0.0 is a new major, not one minor ahead
        ("1.28.0", ["1.29.10"]),
        ("garbage", []),
    ],
)
def test_targets_are_newer_and_at_most_one_minor_ahead(current, targets):
    assert upgrade_targets(current, SUPPORTED) == targets


def test_versions_compare_as_numbers_not_text():
    assert upgrade_targets("1.9.0", ["1.10.1", "1.9.10", "1.9.2"]) == ["1.9.2", "1.9.10", "1.10.1"]
    assert parse_version("v1.31.2") == (1, 31, 2)
    assert parse_version("1.31") is None
