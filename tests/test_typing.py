"""app/ type-checks: mypy, configured in pyproject.toml, against gen/'s stubs, finds nothing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def test_mypy_finds_no_error_in_app():
    if importlib.util.find_spec("mypy") is None:
        pytest.fail("mypy is missing: install the test extra")
    # The files to check and the settings come from [tool.mypy]: the same run as a bare `mypy`.
    result = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
