"""The store's database fixtures (SQLite file, PostgreSQL schema), and the HTTP server, for
whole-server tests."""

import pytest

from tests.store.conftest import postgres_url, sqlite_url, store_url  # noqa: F401


@pytest.fixture(params=["uvicorn", "pyvoy"])
def http_server(request: pytest.FixtureRequest) -> str:
    """The HTTP server a whole-server test runs on: each such test runs on both."""
    return str(request.param)
