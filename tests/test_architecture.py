"""The rooms and doors of docs/concepts/architecture.md, checked by import-linter (contracts in
pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def test_import_contracts_hold():
    exe = Path(sys.executable).parent
    lint_imports = shutil.which("lint-imports", path=str(exe)) or shutil.which("lint-imports")
    if lint_imports is None:
        pytest.fail("lint-imports is missing: install the test extra (import-linter)")
    result = subprocess.run(
        [lint_imports, "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
