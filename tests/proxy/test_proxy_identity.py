"""``portico proxy`` with roles by policy and the caller's identity forwarded: the policy file's
roles for the upstream's methods (checked once its descriptors are known), and what the upstream
learns of the caller (PORTICO_PROXY_FORWARD_IDENTITY), on uvicorn and on pyvoy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.harness import run
from tests.proxy.processes import free_port, python_gen, start_proxy, start_python_echo

POLICY = """\
rules:
  - methods: ["portico.echo.v1.Echo/Say"]
    roles: [admin]
  - service: portico.echo.v1.Echo
    methods: ["Count"]
    roles: [viewer, admin]
"""


def _add_account(data_dir: Path, name: str, role: str, password: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app", "users", "add", name, "--role", role, "--password-stdin"],
        input=password + "\n",
        env={"PORTICO_DATA_DIR": str(data_dir), "PORTICO_PASSWORD_HASH_COST": "16", "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("server", ["uvicorn", "pyvoy"])
def test_the_policy_file_decides_and_the_upstream_learns_who_called(tmp_path, server):
    data_dir = tmp_path / "data"
    _add_account(data_dir, "admin", "admin", "admin-password")
    _add_account(data_dir, "vera", "viewer", "vera-password")
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    port = free_port()
    upstream = start_python_echo(python_gen(tmp_path / "echo"), port)
    try:
        proxy, base = start_proxy(
            "--upstream", f"127.0.0.1:{port}", "--auth", "jwt", "--server", server,
            data_dir=data_dir,
            env={"PORTICO_POLICY_FILE": str(policy), "PORTICO_PROXY_FORWARD_IDENTITY": "metadata"},
        )  # fmt: skip
        try:
            run(_calls(base))
        finally:
            proxy.stop()
    finally:
        upstream.stop()


async def _calls(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:

        async def token(name: str, password: str) -> dict[str, str]:
            reply = await http.post("/v1/auth:login", json={"username": name, "password": password})
            assert reply.status_code == 200, reply.text
            return {"authorization": f"Bearer {reply.json()['token']}"}

        admin, vera = await token("admin", "admin-password"), await token("vera", "vera-password")
        # Say is read-only by its name, yet the file gives it to admin alone.
        refused = await http.get("/v1/say/hi", headers=vera)
        assert refused.status_code == 403, refused.text
        # A caller's own x-portico-* never reaches the upstream; the gate's identity does.
        forged = {**admin, "grpc-metadata-x-portico-subject": "someone-else"}
        reply = await http.get("/v1/say/hi", headers=forged)
        assert reply.status_code == 200, reply.text
        seen = reply.json()["metadata"]
        assert seen["x-portico-subject"] == "admin"
        assert seen["x-portico-roles"] == "admin"
        assert "x-portico-issuer" not in seen  # one of Portico's own accounts
        assert "authorization" not in seen
        counted = await http.get("/v1/count/2", headers=vera)
        assert counted.status_code == 200, counted.text
        assert '"x-portico-subject":"vera"' in counted.text.replace(" ", "")


def test_a_policy_file_naming_no_upstream_method_stops_the_proxy(tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("rules:\n  - methods: [portico.echo.v1.Echo.Shut]\n    roles: [admin]\n")
    port = free_port()
    upstream = start_python_echo(python_gen(tmp_path / "echo"), port)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "app", "proxy", "--upstream", f"127.0.0.1:{port}",
             "--http-port", "0", "--data-dir", str(tmp_path / "data")],
            env={**_env(), "PORTICO_POLICY_FILE": str(policy)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )  # fmt: skip
    finally:
        upstream.stop()
    assert done.returncode != 0
    assert (
        "PORTICO_POLICY_FILE: " + str(policy) + ": rule 1: 'portico.echo.v1.Echo.Shut' is not a "
        "served method"
    ) in done.stderr, done.stderr


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PORTICO_ADMIN_PASSWORD": "admin-password",
        "PORTICO_PASSWORD_HASH_COST": "16",
    }
