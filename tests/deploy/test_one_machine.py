"""deploy/systemd and deploy/compose: each is one its tool accepts, and each tells Portico only
settings it reads, with a stop that outlasts Portico's drain.

The unit is checked by ``systemd-analyze verify`` (offline: it needs no running systemd, so it
works in a container too) and its hardening by ``systemd-analyze security --offline``. The
compose file by ``docker compose config`` where Docker's compose plugin is installed, else by
``docker-compose config`` (Debian's docker-compose, which checks it against the Compose
Specification's schema with no Docker engine); the test's output says which ran.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from app import __version__
from app.settings.config import Settings, variable
from tests.conftest import ROOT, require

DEPLOY = ROOT / "deploy"
UNIT = DEPLOY / "systemd" / "portico.service"
ENV_FILE = DEPLOY / "systemd" / "portico.env"
COMPOSE = DEPLOY / "compose" / "compose.yaml"
SETTINGS = {variable(f.name) for f in dataclasses.fields(Settings)}
EXIT_MARGIN_SECONDS = 5  # as for the Kubernetes pods: the store closing after the grace
# systemd-analyze security's exposure, times ten: under 2.0 is what it calls "OK".
MAX_EXPOSURE = 20


def _systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        require("systemd-analyze", "apt-get install systemd")
    assert found is not None
    return found


def _unit_here(tmp_path: Path) -> Path:
    """The unit with ExecStart's program replaced by this checkout's ``portico`` (verify
    checks that the program exists; /opt/portico is where the unit expects an install)."""
    portico = shutil.which("portico", path=str(Path(sys.executable).parent))
    assert portico is not None, "the portico command of this environment"
    text = UNIT.read_text()
    assert "ExecStart=/opt/portico/bin/portico serve\n" in text
    unit = tmp_path / "portico.service"
    unit.write_text(text.replace("/opt/portico/bin/portico", portico))
    return unit


def test_the_systemd_unit_verifies(tmp_path: Path) -> None:
    result = subprocess.run(
        [_systemd_analyze(), "verify", str(_unit_here(tmp_path))],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    # Unknown keys and bad values are only warnings to systemd: none is allowed here.
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr


def test_the_systemd_unit_is_hardened(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            _systemd_analyze(),
            "security",
            "--offline=true",
            f"--threshold={MAX_EXPOSURE}",
            "--no-pager",
            str(_unit_here(tmp_path)),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr


def _unit_settings() -> dict[str, str]:
    values = {}
    for line in UNIT.read_text().splitlines():
        if line.startswith("Environment="):
            name, _, value = line.removeprefix("Environment=").partition("=")
            values[name] = value
    return values


def test_the_unit_sets_only_settings_and_stops_after_the_drain() -> None:
    text = UNIT.read_text()
    env = _unit_settings()
    portico = {k: v for k, v in env.items() if k.startswith("PORTICO_")}
    assert set(portico) <= SETTINGS
    settings = Settings.from_env(portico)
    assert str(settings.data_dir) == "/var/lib/" + re.search(r"StateDirectory=(\S+)", text)[1]
    stop = int(re.search(r"^TimeoutStopSec=(\d+)$", text, re.MULTILINE)[1])
    assert stop >= settings.shutdown_grace_seconds + EXIT_MARGIN_SECONDS
    # Only the main process is signalled: it drains its workers (docs/operations/shutdown.md).
    assert "\nKillMode=mixed\n" in text


def test_the_env_file_names_only_settings_and_is_read_by_the_unit() -> None:
    names = re.findall(r"^(PORTICO_\w+)=", ENV_FILE.read_text(), re.MULTILINE)
    assert names and set(names) <= SETTINGS
    # Empty, as shipped, each means its default: the file as it is starts a server.
    Settings.from_env(dict.fromkeys(names, ""))
    assert "EnvironmentFile=-/etc/portico/portico.env" in UNIT.read_text()


def _compose_checker() -> list[str]:
    docker = shutil.which("docker")
    if docker is not None:
        plugin = subprocess.run(
            [docker, "compose", "version"], capture_output=True, check=False, timeout=60
        )
        if plugin.returncode == 0:
            return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    if legacy is None:
        require("docker compose or docker-compose", "apt-get install docker-compose")
    assert legacy is not None
    return [legacy]


def test_the_compose_file_is_valid(capsys: pytest.CaptureFixture[str]) -> None:
    checker = _compose_checker()
    result = subprocess.run(
        [*checker, "-f", str(COMPOSE), "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},  # no PORTICO_ADMIN_PASSWORD: the file's default holds
    )
    with capsys.disabled():
        print(f"\ncompose file checked with: {' '.join(checker)}")
    assert result.returncode == 0, f"{' '.join(checker)} config: {result.stderr}"


def test_the_compose_file_tells_portico_what_it_reads() -> None:
    service = yaml.safe_load(COMPOSE.read_text())["services"]["portico"]
    assert service["image"] == f"portico:{__version__}"
    env = {k: re.sub(r"\$\{\w+:-(.*)\}", r"\1", str(v)) for k, v in service["environment"].items()}
    assert set(env) <= SETTINGS
    # The image's environment (Dockerfile ENV) under the file's.
    dockerfile = (ROOT / "Dockerfile").read_text()
    image_env = dict(re.findall(r"(PORTICO_\w+)=(\S+)", dockerfile))
    settings = Settings.from_env({**image_env, **env})
    published = sorted(int(p.split(":")[1]) for p in service["ports"])
    assert published == sorted([settings.http_port, settings.grpc_port])
    assert service["volumes"] == [f"portico-data:{settings.data_dir}"]
    assert service["read_only"] is True and service["tmpfs"][0].startswith("/tmp")
    assert service["user"] == re.findall(r"^USER (\S+)$", dockerfile, re.MULTILINE)[-1]
    grace = int(service["stop_grace_period"].removesuffix("s"))
    assert grace >= settings.shutdown_grace_seconds + EXIT_MARGIN_SECONDS
