"""The PostgreSQL fixture: skipped locally without a server, a failure under CI=true."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.store.conftest import DATABASE_URL_VARIABLE

pytestmark = pytest.mark.slow  # seconds per test: scheduled first (tests/conftest.py)

ONE_POSTGRES_TEST = "tests/store/test_accounts.py::test_accounts_are_listed_by_username[postgres]"


def without_postgres(ci: str) -> subprocess.Popen[str]:
    """One PostgreSQL test in a pytest of its own, with no server configured."""
    env = {k: v for k, v in os.environ.items() if k not in {DATABASE_URL_VARIABLE, "CI"}}
    if ci:
        env["CI"] = ci
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", ONE_POSTGRES_TEST],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_postgres_tests_skip_locally_and_fail_under_ci_without_a_server():
    # Both at once: each pytest takes seconds to start.
    runs = {ci: without_postgres(ci) for ci in ("", "true")}
    (local, _), (ci, _) = (runs[key].communicate(timeout=120) for key in ("", "true"))
    assert runs[""].returncode == 0, local
    assert "1 skipped" in local

    assert runs["true"].returncode == 1, ci
    assert "1 error" in ci
    assert DATABASE_URL_VARIABLE in ci
