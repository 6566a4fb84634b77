"""``portico login --token``: a token pasted from the identity provider is kept for
``portico call`` once the server accepts it; one it does not accept is refused at once."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.auth.identity_provider import provider_settings, serving_provider
from tests.harness import run, running, uvicorn_serving
from tests.test_client_cli import addresses, portico

VERSION = "cnct.kaas.api.Cluster/GetVersionInformation"


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_login_with_a_pasted_provider_token_then_call(
    tmp_path: Path, login_file: Path, transport: str
) -> None:

    async def check() -> None:
        async with (
            serving_provider() as provider,
            running(tmp_path / "data", **provider_settings(provider)) as served,
            uvicorn_serving(served.portico.http_app) as rest,
        ):
            where = addresses(served, rest, transport)
            # A token for another audience: refused now, and nothing is kept.
            other = provider.token(aud="another-app")
            status, _, err = await portico("login", "--token", other, *where)
            assert status == 1 and "does not accept this token" in err, err
            assert not login_file.exists()

            # Pasted on stdin, as copied from the provider (with or without "Bearer ").
            token = provider.token(sub="ci-robot")
            status, out, err = await portico(
                "login", "--token", "-", *where, stdin=f"Bearer {token}\n"
            )
            assert status == 0, err
            assert "logged in with the identity provider's token" in out
            assert stat.S_IMODE(login_file.stat().st_mode) == 0o600
            assert json.loads(login_file.read_text())["token"] == token

            # `portico call` uses it with no flag: the login kept the transport and addresses.
            status, out, err = await portico("call", VERSION)
            assert status == 0, err
            assert json.loads(out)["ok"] is True
            # The provider's roles claim says viewer: an operator's method is refused.
            status, _, err = await portico("call", "cnct.kaas.api.Cluster/CreateCluster")
            assert status == 1 and "role 'viewer' may not call CreateCluster" in err, err

    run(check())
