"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def require(what: str, reason: str) -> None:
    """Skip a test that lacks ``what`` locally; under CI=true, fail instead so nothing hides."""
    message = f"{what} is not available: {reason}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message} (CI=true requires it)", pytrace=False)
    pytest.skip(message)


# The original systems' API documents and wire facts, kept with the tests so that a clean clone
# needs nothing outside the repository (test_original_data.py keeps them equal to the source).
ORIGINAL_DIR = ROOT / "tests" / "data" / "original"


@pytest.fixture(scope="session")
def original_dir() -> Path:
    """The seed documents (``seeds/``) and wire facts (``wire.json``) of the original systems."""
    return ORIGINAL_DIR
