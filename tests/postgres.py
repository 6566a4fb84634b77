"""What the PostgreSQL tests and the replica harness share: a URL libpq reads, and a fresh
schema on a server for one test or run."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import psycopg
from sqlalchemy.engine import make_url

from app.store import normalize_url


def libpq_url(url: str) -> str:
    """``url`` (a SQLAlchemy URL, driver and all) as libpq reads it."""
    return normalize_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@contextlib.contextmanager
def fresh_schema(server_url: str, prefix: str) -> Iterator[str]:
    """A URL whose search path is a new, empty schema; the schema is dropped afterwards."""
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(libpq_url(server_url), autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    try:
        url = make_url(server_url).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with psycopg.connect(libpq_url(server_url), autocommit=True, connect_timeout=5) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
