"""The code stays ruff-clean; a failure lists every finding."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def test_ruff_passes_on_app_and_tests():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.fail("ruff is missing: install the test extra")
    result = subprocess.run(
        [ruff, "check", "--no-cache", "app", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
