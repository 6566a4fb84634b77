"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve_process import Workers, serve_process

ROOT = Path(__file__).resolve().parent.parent

# Caches that only save time (the Go programs the tests build, buf's) stay where they are; the
# rest of the user's home is out of reach (see isolated_home).
CACHE_HOME = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
# What the client commands read besides their flags: a user's shell may export them.
CLIENT_VARIABLES = ("PORTICO_LOGIN_FILE", "PORTICO_TOKEN")


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


def isolated_home(patch: pytest.MonkeyPatch, home: Path) -> None:
    """Give this process, and every process it starts, ``home`` as its home and configuration
    folder: the suite must not read the user's files (a saved ``portico login`` would send
    the tests' calls to the user's server with the user's token) nor write them."""
    patch.setenv("HOME", str(home))
    for variable, folder in (
        ("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
    ):  # fmt: skip
        patch.setenv(variable, str(home / folder))
    patch.setenv("XDG_CACHE_HOME", CACHE_HOME)
    for variable in CLIENT_VARIABLES:
        patch.delenv(variable, raising=False)


@pytest.fixture(scope="session", autouse=True)
def session_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A home of the test process's own, before any session or module fixture starts a server."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        isolated_home(patch, home)
        yield home


@pytest.fixture(autouse=True)
def test_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh home for each test: what one test's ``portico login`` kept, the next never sees."""
    home = tmp_path_factory.mktemp("home")
    isolated_home(monkeypatch, home)
    return home


def require(what: str, reason: str) -> None:
    """Skip a test that lacks ``what`` locally; under CI=true, fail instead so nothing hides."""
    message = f"{what} is not available: {reason}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message} (CI=true requires it)", pytrace=False)
    pytest.skip(message)


# The original systems' API documents and wire facts, kept with the tests so that a clean clone
# needs nothing outside the repository (test_original_data.py keeps them equal to the source).
ORIGINAL_DIR = ROOT / "tests" / "data" / "original"


@pytest.fixture
def login_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where this test's ``portico login`` keeps its login (``PORTICO_LOGIN_FILE``)."""
    path = tmp_path / "config" / "login.json"
    monkeypatch.setenv("PORTICO_LOGIN_FILE", str(path))
    return path


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
