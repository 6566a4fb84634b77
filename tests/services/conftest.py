"""The store's database fixtures (SQLite file, PostgreSQL schema), for services on either store."""

from tests.store.conftest import postgres_url, sqlite_url, store_url  # noqa: F401
