"""Settings come from PORTICO_* variables; command-line flags win over them."""

from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path

import pytest

from app.cli.commands import _parser
from app.cli.flags import settings_from
from app.server.process import warn_unread_variables
from app.settings.config import OTHER_VARIABLES, Settings, unread_variables, variable
from app.settings.reference import MEANINGS


def test_defaults_serve_on_a_fresh_machine():
    settings = Settings.from_env({})
    assert (settings.http_port, settings.grpc_port) == (8080, 50051)
    assert settings.effective_database_url == "sqlite:///data/portico.db"


def test_environment_variables_set_typed_fields():
    settings = Settings.from_env(
        {
            "PORTICO_HTTP_PORT": "9000",
            "PORTICO_DATA_DIR": "/var/lib/portico",
            "PORTICO_DEMO": "yes",
            "PORTICO_CORS_ORIGINS": "http://a.example, http://b.example",
            "PORTICO_SIM_STEP_SECONDS": "0.01",
        }
    )
    assert settings.http_port == 9000
    assert settings.data_dir == Path("/var/lib/portico")
    assert settings.demo is True
    assert settings.cors_origins == ("http://a.example", "http://b.example")
    assert settings.sim_step_seconds == 0.01


def test_a_bad_value_names_its_variable():
    with pytest.raises(ValueError, match="PORTICO_HTTP_PORT"):
        Settings.from_env({"PORTICO_HTTP_PORT": "eighty"})


def test_flags_win_over_the_environment():
    base = Settings.from_env({"PORTICO_HTTP_PORT": "9000", "PORTICO_GRPC_PORT": "9001"})
    args = _parser().parse_args(["serve", "--http-port", "7000"])
    settings = settings_from(args, base)
    assert (settings.http_port, settings.grpc_port) == (7000, 9001)


def test_image_retention_is_read_and_checked():
    settings = Settings.from_env({"PORTICO_IMAGE_RETENTION_SECONDS": "90"})
    assert settings.image_retention_seconds == 90.0
    with pytest.raises(ValueError, match="PORTICO_IMAGE_RETENTION_SECONDS"):
        Settings.from_env({"PORTICO_IMAGE_RETENTION_SECONDS": "-1"})


def test_a_misspelt_variable_is_named_with_the_setting_it_is_closest_to():
    environ = {
        "PORTICO_HTTP_PROT": "18080",  # misspelt: the port would stay 8080 without a word
        "PORTICO_GRPC_PORT": "18443",  # a setting
        "PORTICO_TOKEN": "t",  # the client commands'
        "PORTICO_NODE_SERVER": "127.0.0.1:50051",  # the node agent's
        "PORTICO_TEST_DATABASE_URL": "postgresql://x",  # the test suite's
        "PORTICO_NOTHING_LIKE_IT": "1",
        "PATH": "/usr/bin",
    }
    assert unread_variables(environ) == [
        "PORTICO_HTTP_PROT is not a setting and is ignored (did you mean PORTICO_HTTP_PORT?)",
        "PORTICO_NOTHING_LIKE_IT is not a setting and is ignored",
    ]


def test_serve_and_proxy_say_which_variables_nothing_reads(monkeypatch, caplog):
    monkeypatch.setenv("PORTICO_WOKERS", "2")
    with caplog.at_level(logging.WARNING, logger="portico"):
        warn_unread_variables()
    assert "PORTICO_WOKERS is not a setting and is ignored (did you mean PORTICO_WORKERS?)" in (
        caplog.text
    )


def test_every_variable_the_code_names_is_a_setting_or_known_as_read_elsewhere():
    """What keeps the warning above from naming a variable that something does read."""
    root = Path(__file__).resolve().parents[1] / "app"
    named = {
        found
        for path in root.rglob("*.py")
        for found in re.findall(r"\"(PORTICO_[A-Z0-9_]+)\"", path.read_text())
    }
    settings = {variable(f.name) for f in dataclasses.fields(Settings)}
    assert named - settings - OTHER_VARIABLES == set()


def test_the_settings_page_lists_every_setting_with_its_meaning():
    """Every setting has its row in the generated settings reference (kept in sync with the
    code by tests/test_codegen.py), with a meaning written for it."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "reference" / "settings.md").read_text()
    table = page.split("<!-- settings-table:begin -->")[1].split("<!-- settings-table:end -->")[0]
    listed = set(re.findall(r"^\| `(PORTICO_[A-Z0-9_]+)` \|", table, flags=re.M))
    assert listed == {variable(f.name) for f in dataclasses.fields(Settings)}
    assert set(MEANINGS) == {f.name for f in dataclasses.fields(Settings)}


# Names in app/ that are no variable: the shape of a refusal, a misspelling shown as an example.
NOT_VARIABLES = {"PORTICO_X", "PORTICO_HTTP_PROT"}


def test_every_variable_any_command_reads_is_in_the_settings_reference():
    """The node agent's, the client commands', an image build's, the suite's own: whatever
    PORTICO_* name the code holds (a string, a help text) has its row on the settings page."""
    root = Path(__file__).resolve().parents[1]
    named = {
        found
        for path in (root / "app").rglob("*.py")
        for found in re.findall(r"\bPORTICO_[A-Z0-9_]*[A-Z0-9]\b", path.read_text())
    }
    named |= {  # what the tests read from their environment
        found
        for path in (root / "tests").rglob("*.py")
        for found in re.findall(r"environ(?:\.get\(|\[)\"(PORTICO_[A-Z0-9_]+)\"", path.read_text())
    }
    page = (root / "docs" / "reference" / "settings.md").read_text()
    rows = set(re.findall(r"^\| `(PORTICO_[A-Z0-9_]+)` \|", page, flags=re.M))
    assert named - NOT_VARIABLES - rows == set()
