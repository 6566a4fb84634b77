"""Engine creation: URL normalisation and the SQLite file's directory."""

from __future__ import annotations

import pytest

from app.store import normalize_url
from app.store.engine import create_store_engine


@pytest.mark.parametrize(
    ("given", "driver"),
    [
        ("postgresql://u:p@db.example:5432/portico", "postgresql+psycopg"),
        ("postgres://u:p@db.example/portico", "postgresql+psycopg"),
        ("postgresql+psycopg://u:p@db.example/portico", "postgresql+psycopg"),
        ("sqlite:///data/portico.db", "sqlite"),
    ],
)
def test_plain_postgresql_urls_use_psycopg_3(given, driver):
    url = normalize_url(given)
    assert url.drivername == driver
    assert url.database in {"portico", "data/portico.db"}


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_an_in_memory_sqlite_database_is_refused(url):
    with pytest.raises(ValueError, match="SQLite file"):
        normalize_url(url)


def test_the_sqlite_files_directory_is_created(tmp_path):
    engine = create_store_engine(f"sqlite:///{tmp_path / 'fresh' / 'data' / 'portico.db'}")
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
    finally:
        engine.dispose()
    assert (tmp_path / "fresh" / "data" / "portico.db").is_file()
