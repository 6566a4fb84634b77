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


def run_without_postgres(ci: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {DATABASE_URL_VARIABLE, "CI"}}
    if ci:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", ONE_POSTGRES_TEST],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_postgres_tests_skip_locally_and_fail_under_ci_without_a_server():
    local = run_without_postgres(ci="")
    assert local.returncode == 0, local.stdout
    assert "1 skipped" in local.stdout

    ci = run_without_postgres(ci="true")
    assert ci.returncode == 1, ci.stdout
    assert "1 error" in ci.stdout
    assert DATABASE_URL_VARIABLE in ci.stdout
