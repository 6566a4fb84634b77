"""The PostgreSQL fixtures fail fast: without the variable under CI=true, and when the server
does not answer, every PostgreSQL test fails with one line after at most one attempt per test
process (a suite of 70 such tests once waited out a connection timeout each)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from tests.store import conftest


def test_without_the_variable_under_ci_each_test_fails_with_one_line(monkeypatch) -> None:
    monkeypatch.delenv(conftest.DATABASE_URL_VARIABLE, raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception) as failed:
        conftest._postgres_server_url()
    assert "PORTICO_TEST_DATABASE_URL" in str(failed.value)
    assert "\n" not in str(failed.value)


def test_a_server_that_does_not_answer_is_asked_once(monkeypatch) -> None:
    url = "postgresql://portico:secret@127.0.0.1:1/portico_test"
    monkeypatch.setenv(conftest.DATABASE_URL_VARIABLE, url)
    attempts: list[str] = []

    def refuse(conninfo: str, **options: Any) -> Any:
        attempts.append(conninfo)
        raise psycopg.OperationalError("connection refused")

    monkeypatch.setattr(psycopg, "connect", refuse)
    conftest._unreachable.cache_clear()
    try:
        for _ in range(3):
            with pytest.raises(pytest.fail.Exception) as failed:
                conftest._postgres_server_url()
            said = str(failed.value)
            assert said.startswith("PostgreSQL at postgresql://portico:***@127.0.0.1:1/")
            assert "does not answer: connection refused" in said and "secret" not in said
        assert len(attempts) == 1
    finally:
        conftest._unreachable.cache_clear()
