"""Settings come from PORTICO_* variables; command-line flags win over them."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.__main__ import _parser, settings_from
from app.config import Settings


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
