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


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The project's shared folder (seed documents, wire facts), beside the checkout."""
    path = Path(os.environ.get("PORTICO_SHARED_DIR", ROOT.parent / "shared"))
    if not (path / "wire.json").is_file():
        require("the shared folder", f"no wire.json in {path} (set PORTICO_SHARED_DIR)")
    return path
