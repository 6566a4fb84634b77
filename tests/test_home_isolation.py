"""The suite runs beside the user's own Portico: a login the README's tour kept in
``~/.config/portico/login.json`` (or under ``$XDG_CONFIG_HOME``) must not reach any test, and
no test may write there (tests/conftest.py gives each test a home of its own)."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from app.cli.saved_login import login_file
from tests.conftest import ROOT

# The user's home as the system knows it, whatever HOME says now.
USER_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()
LOGIN_FILE = "from app.cli.saved_login import login_file; print(login_file())"


@pytest.fixture
def in_a_home_of_the_tests(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], None]:
    def check(path: Path) -> None:
        assert path.resolve().is_relative_to(tmp_path_factory.getbasetemp().resolve()), path
        assert not path.resolve().is_relative_to(USER_HOME), path

    return check


def test_the_login_file_a_test_sees_is_in_a_home_of_its_own(in_a_home_of_the_tests) -> None:
    in_a_home_of_the_tests(Path.home())
    in_a_home_of_the_tests(Path(os.environ["XDG_CONFIG_HOME"]))
    assert login_file().resolve().is_relative_to(Path.home().resolve())
    assert not login_file().exists()
    assert "PORTICO_TOKEN" not in os.environ and "PORTICO_LOGIN_FILE" not in os.environ


def test_a_command_a_test_starts_has_that_home_too(in_a_home_of_the_tests) -> None:
    said = subprocess.run(
        [sys.executable, "-c", LOGIN_FILE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    in_a_home_of_the_tests(Path(said.stdout.strip()))
