"""The quick start of docs/getting-started.md as pasted: every shell block of it, in order,
in one bash, in a fresh copy of the repository (so a fresh ``./data``), each expected to succeed.

Four things differ from a newcomer's machine, none of them in the blocks' text:

- the server's ports are free ones (``PORTICO_HTTP_PORT``/``_GRPC_PORT``, and the blocks' URLs
  follow), so the test runs beside anything else;
- ``pip install -e .`` finds the dependencies already installed: ``.venv`` exists beforehand and
  sees this test environment's packages (not pip, not portico itself), and pip neither reaches an
  index nor builds in isolation, so installing takes seconds instead of minutes;
- password hashes are cheap (``PORTICO_PASSWORD_HASH_COST``, as in every test);
- curl fails on an HTTP error status (``fail-with-body`` in its config), so a refused call fails
  its block instead of printing an error.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import ROOT, require

pytestmark = pytest.mark.slow  # seconds per test: scheduled first (tests/conftest.py)

# What a fresh clone lacks: local state, caches, build output.
NOT_IN_A_CLONE = {".git", ".venv", "data", "portico.log", "build", "dist"}
CACHES = shutil.ignore_patterns("__pycache__", "*.egg-info", ".*_cache", "node_modules")


def quick_start_blocks(readme: str) -> list[str]:
    """The ```sh blocks of the "Quick start" section of the getting-started page, in order."""
    section = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```sh\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _clone(checkout: Path) -> None:
    def ignore(folder: str, names: list[str]) -> set[str]:
        top = NOT_IN_A_CLONE & set(names) if Path(folder) == ROOT else set()
        return top | CACHES(folder, names)

    shutil.copytree(ROOT, checkout, ignore=ignore, symlinks=True)


def _venv_with_our_dependencies(checkout: Path, python3: str) -> None:
    """``.venv`` as ``python3 -m venv`` makes it, seeing this environment's packages except pip
    (the README's venv brings its own) and portico (the README installs it)."""
    subprocess.run([python3, "-m", "venv", "--without-pip", checkout / ".venv"], check=True)
    ours = Path(sysconfig.get_path("purelib"))
    dependencies = checkout.parent / "dependencies"
    dependencies.mkdir()
    for entry in ours.iterdir():
        if not re.match(r"(pip|portico|__editable__)\b|.*\.pth$", entry.name):
            (dependencies / entry.name).symlink_to(entry)
    site_packages = next((checkout / ".venv").glob("lib/python*/site-packages"))
    (site_packages / "dependencies.pth").write_text(f"{dependencies}\n")


def _environment(tmp_path: Path, http_port: int, grpc_port: int) -> dict[str, str]:
    # A newcomer's shell: no PORTICO_* settings, no active virtualenv, portico not on PATH.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PORTICO_", "VIRTUAL_ENV"))}
    ours = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != ours)
    curl_home = tmp_path / "curl"
    curl_home.mkdir()
    (curl_home / ".curlrc").write_text("fail-with-body\n")
    return env | {
        "PORTICO_HTTP_PORT": str(http_port),
        "PORTICO_GRPC_PORT": str(grpc_port),
        "PORTICO_PASSWORD_HASH_COST": "16",
        "CURL_HOME": str(curl_home),
        "PIP_NO_INDEX": "1",
        # pip reads a "no" variable inverted: 0 here means --no-build-isolation.
        "PIP_NO_BUILD_ISOLATION": "0",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


def _script(blocks: list[str], folder: Path) -> Path:
    """One bash running each block in turn, saying which one failed."""
    lines = ["set -eo pipefail", """trap 'echo "quick start block $block failed" >&2' ERR"""]
    for number, block in enumerate(blocks, start=1):
        path = folder / f"block-{number}.sh"
        path.write_text(block)
        lines += [f"block={number}", f". {path}", f"echo '--- block {number} succeeded'"]
    script = folder / "quick-start.sh"
    script.write_text("\n".join(lines) + "\n")
    return script


def _kill_group(leader: int) -> bool:
    """Kill what is left of the shell's process group; whether anything was."""
    try:
        os.killpg(leader, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def _output(*command: str) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=False).stdout


def _require_what_the_quick_start_uses() -> str:
    """A python3 of this environment's version, and curl 7.82+; the path of that python3."""
    if sys.prefix == sys.base_prefix:
        require("a virtualenv", "the test lends its virtualenv's packages to the README's")
    ours = "{}.{}".format(*sys.version_info[:2])
    python3, curl = shutil.which("python3"), shutil.which("curl")
    asked = "import sys; print('%d.%d' % sys.version_info[:2])"
    if python3 is None or _output(python3, "-c", asked).strip() != ours:
        require(f"python3 {ours} on PATH", "the README's venv must match this environment's")
    if curl is None or _version(_output(curl, "--version").split()[1]) < (7, 82):
        require("curl 7.82 or newer", "the quick start uses curl --json")
    assert python3 is not None
    return python3


def test_every_quick_start_block_succeeds_in_order(tmp_path):
    python3 = _require_what_the_quick_start_uses()
    http_port, grpc_port = _free_port(), _free_port()
    blocks = [
        block.replace("127.0.0.1:8080", f"127.0.0.1:{http_port}").replace(
            "127.0.0.1:50051", f"127.0.0.1:{grpc_port}"
        )
        for block in quick_start_blocks((ROOT / "docs" / "getting-started.md").read_text())
    ]
    assert blocks and blocks[0].startswith("python3 -m venv .venv")
    checkout = tmp_path / "portico"
    _clone(checkout)
    _venv_with_our_dependencies(checkout, python3)
    (tmp_path / "blocks").mkdir()
    script = _script(blocks, tmp_path / "blocks")

    shell = subprocess.Popen(
        ["bash", script],
        cwd=checkout,
        env=_environment(tmp_path, http_port, grpc_port),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # the server it starts joins its process group
    )
    try:
        output, _ = shell.communicate(timeout=180)
    finally:
        leftover = _kill_group(shell.pid)

    log = checkout / "portico.log"
    assert shell.returncode == 0, output + (
        f"\nportico.log:\n{log.read_text()}" if log.exists() else ""
    )
    assert not leftover, "the quick start left a process running (the server not stopped?)"
    for number in range(1, len(blocks) + 1):
        assert f"--- block {number} succeeded" in output
    assert '{"status":"ready"}' in output
    assert "alice\tviewer\tenabled" in output
    # The state went to the fresh ./data of the copy, and the server has stopped.
    assert (checkout / "data" / "portico.db").is_file()
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", http_port)) != 0
