"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve_process import Workers, serve_process

ROOT = Path(__file__).resolve().parent.parent


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Processes for ``-n auto`` (in pyproject's addopts): the whole suite runs on two, each
    module whole on one (``--dist loadscope``: its module fixtures start once); chosen tests run
    in this process, where starting workers would cost more than it saves."""
    if config.args_source is not pytest.Config.ArgsSource.TESTPATHS:
        return 0
    return min(2, os.cpu_count() or 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests (and the browser's) first: handed out to the test processes from the
    start, they do not leave one process finishing alone at the end."""
    items.sort(key=lambda item: not any(map(item.get_closest_marker, ("slow", "chromium"))))


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


@pytest.fixture(scope="session")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    """One ``portico serve --workers 2`` on ports 0 (per test process), shared by the tests that
    look at a running server (its start-up lines, ports, probes, metrics) without changing what
    others see there: each start costs seconds."""
    data_dir = tmp_path_factory.mktemp("two-workers") / "data"
    with serve_process([sys.executable], data_dir, cwd=ROOT, workers=2) as served:
        yield Workers(served, data_dir)
