"""Fixtures for the store tests: one suite, run against SQLite and a real PostgreSQL.

PostgreSQL tests use ``PORTICO_TEST_DATABASE_URL``; each test gets a fresh schema. Without the
variable they skip, except under ``CI=true`` where they fail so a missing server cannot hide.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import psycopg
import pytest
from sqlalchemy.engine import make_url

from app.store import ObjectStore
from tests.postgres import fresh_schema, libpq_url
from tests.store.peer import Peer

DATABASE_URL_VARIABLE = "PORTICO_TEST_DATABASE_URL"
# Generous: a hung watch must fail the test, not the whole run.
TEST_TIMEOUT = 30.0

T = TypeVar("T")


def _postgres_server_url() -> str:
    url = os.environ.get(DATABASE_URL_VARIABLE, "")
    if not url:
        message = f"PostgreSQL tests need {DATABASE_URL_VARIABLE} (a postgresql:// URL)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; CI=true requires them to run", pytrace=False)
        pytest.skip(message)
    if (unreachable := _unreachable(url)) is not None:
        pytest.fail(unreachable, pytrace=False)
    return url


@functools.cache
def _unreachable(url: str) -> str | None:
    """Why the server of ``url`` cannot be used, asked once per test process: a server that is
    down fails every PostgreSQL test at once with this line, not each after its own timeout."""
    try:
        with psycopg.connect(libpq_url(url), autocommit=True, connect_timeout=5):
            return None
    except psycopg.OperationalError as exc:
        shown = make_url(url).render_as_string(hide_password=True)
        said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return (
            f"PostgreSQL at {shown} ({DATABASE_URL_VARIABLE}) does not answer: {said}; "
            "start it (.ci/run does) or unset the variable"
        )


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A URL whose search path is a fresh, empty schema; the schema is dropped afterwards."""
    with fresh_schema(_postgres_server_url(), "store_test") as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Any) -> str:
    """A SQLite file in the test's temporary directory."""
    return f"sqlite:///{tmp_path / 'data' / 'portico.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest) -> str:
    """The database URL of the backend under test."""
    return str(request.getfixturevalue(f"{request.param}_url"))


def run(coroutine: Awaitable[T]) -> T:
    """Run a test coroutine on a fresh event loop, failing it if it hangs."""

    async def bounded() -> T:
        async with asyncio.timeout(TEST_TIMEOUT):
            return await coroutine

    return asyncio.run(bounded())


StoreBody = Callable[[ObjectStore], Awaitable[Any]]


@pytest.fixture
def with_store(store_url: str) -> Callable[..., Any]:
    """Call ``with_store(body, **open_options)`` to run ``await body(store)`` on an open store."""

    def run_body(body: StoreBody, **options: Any) -> Any:
        async def scenario() -> Any:
            async with ObjectStore.open(store_url, **options) as store:
                return await body(store)

        return run(scenario())

    return run_body


@pytest.fixture
def spawn_peer() -> Iterator[Callable[..., Peer]]:
    """Call ``spawn_peer(url, command...)`` to start another process on a database (see peer.py);
    every one is killed afterwards."""
    peers: list[Peer] = []

    def spawn(url: str, *command: str) -> Peer:
        peer = Peer.start(url, *command)
        peers.append(peer)
        return peer

    yield spawn
    for peer in peers:
        peer.kill()
