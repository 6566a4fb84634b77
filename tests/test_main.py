"""Starting Portico: the bootstrap admin, the refusal of weak secrets."""

from __future__ import annotations

import pytest

from app.settings.config import ConfigurationError
from tests.harness import run, running


def test_first_start_prints_a_random_admin_password_once(tmp_path, capsys):
    async def start_twice() -> tuple[str, str]:
        async with running(tmp_path, admin_password=""):
            first = capsys.readouterr().out
        async with running(tmp_path, admin_password=""):
            second = capsys.readouterr().out
        return first, second

    first, second = run(start_twice())
    assert "Created account 'admin' with password" in first
    assert "Created account" not in second
    password = first.split("with password ")[1].split()[0]

    async def login() -> int:
        async with running(tmp_path, admin_password="") as server:
            reply = await server.http.post(
                "/v1/auth:login", json={"username": "admin", "password": password}
            )
            return reply.status_code

    assert run(login()) == 200


def test_a_short_jwt_secret_refuses_to_start(tmp_path):
    async def start() -> None:
        async with running(tmp_path, jwt_secret="too-short"):
            pass

    with pytest.raises(ConfigurationError, match="PORTICO_JWT_SECRET"):
        run(start())


def test_health_and_readiness(tmp_path):
    async def probe() -> tuple[int, int]:
        async with running(tmp_path) as server:
            return (
                (await server.http.get("/healthz")).status_code,
                (await server.http.get("/readyz")).status_code,
            )

    assert run(probe()) == (200, 200)


def test_not_ready_when_the_store_does_not_answer(tmp_path):
    async def probe() -> int:
        async with running(tmp_path) as server:
            await server.portico.store.close()
            return (await server.http.get("/readyz")).status_code

    assert run(probe()) == 503
