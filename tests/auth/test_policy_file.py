"""Roles by policy (PORTICO_POLICY_FILE): the roles a file names replace the name rule for the
methods it names, on every transport; a file naming what is not served, or a role Portico does
not have, stops the start with one line; ``portico policy`` prints the effective table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from app.gateway.registry import Registry
from app.main import Portico
from app.settings.config import ConfigurationError
from tests.grpc_calls import grpc_call
from tests.harness import ADMIN_PASSWORD, run, running, settings_for

REGISTRY = Registry.from_package("gen")
POLICY = """\
rules:
  - methods: ["cnct.kaas.api.Cluster/GetVersionInformation"]
    roles: [admin]
  - service: cnct.kaas.api.Cluster
    methods: ["Create*"]
    roles: [viewer, admin]
"""


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return str(path)


def test_the_file_s_roles_replace_the_name_rule_for_the_methods_it_names(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path / "data", policy_file=_file(tmp_path, POLICY)) as server:
            viewer = await server.add_account("vera", "viewer")
            operator = await server.add_account("otto", "operator")
            version = REGISTRY.method("/cnct.kaas.api.Cluster/GetVersionInformation")
            create = REGISTRY.method("/cnct.kaas.api.Cluster/CreateCluster")
            listing = REGISTRY.method("/cnct.kaas.api.Cluster/GetClusterList")
            denied = grpc.StatusCode.PERMISSION_DENIED
            # Read-only by its name, but the file says admin only.
            assert await grpc_call(server.channel, version, viewer) is denied
            reply = await server.http.get(
                "/api/v1/version", headers={"authorization": f"Bearer {viewer}"}
            )
            assert reply.status_code == 403, reply.text
            # A write a viewer may make, and an operator may not, as the file says.
            assert await grpc_call(server.channel, create, viewer) is not denied
            assert await grpc_call(server.channel, create, operator) is denied
            # A method the file does not name keeps the name rule.
            assert await grpc_call(server.channel, listing, viewer) is grpc.StatusCode.OK
            # Public methods stay public.
            login = await server.http.post(
                "/v1/auth:login", json={"username": "admin", "password": ADMIN_PASSWORD}
            )
            assert login.status_code == 200

    run(scenario())


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "rules:\n  - methods: [cnct.kaas.api.Cluster.GetClustr]\n    roles: [admin]\n",
            "rule 1: 'cnct.kaas.api.Cluster.GetClustr' is not a served method",
        ),
        (
            "rules:\n  - methods: ['nothere.*']\n    roles: [admin]\n",
            "rule 1: 'nothere.*' matches no served method",
        ),
        (
            "rules:\n  - methods: [cnct.kaas.api.Cluster.GetCluster]\n    roles: [root]\n",
            "rule 1: unknown role 'root'; allowed: admin, operator, viewer, node",
        ),
        ("rules: [\n", "not YAML"),
        ("allow: everything\n", "a mapping with one key, rules"),
    ],
)
def test_a_file_naming_what_is_not_there_stops_the_start_naming_it(tmp_path, text, said):
    portico = Portico(settings_for(tmp_path / "data", policy_file=_file(tmp_path, text)))
    with pytest.raises(ConfigurationError) as raised:
        run(portico.start())
    message = str(raised.value)
    assert message.startswith("PORTICO_POLICY_FILE: ") and said in message, message
    assert "\n" not in message


def test_portico_policy_prints_the_effective_table(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "app", "policy", "--policy-file", _file(tmp_path, POLICY)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()}
    assert rows["cnct.kaas.api.Cluster.GetVersionInformation"] == [
        "admin",
        "policy.yaml",
        "rule",
        "1",
    ]
    assert rows["cnct.kaas.api.Cluster.CreateCluster"] == [
        "admin,viewer",
        "policy.yaml",
        "rule",
        "2",
    ]
    assert rows["cnct.kaas.api.Cluster.GetClusterList"] == ["admin,operator,viewer", "name", "rule"]
    assert rows["services.auth.AuthService.Login"][0] == "public"
