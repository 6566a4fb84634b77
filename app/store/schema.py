"""Schema creation on start, with the applied version recorded for later migrations."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, func, insert, select
from sqlmodel import SQLModel

from app.store.database import Database
from app.store.errors import SchemaTooNew
from app.store.indexes import build_missing
from app.store.runner import call_mapped, rollback_quietly
from app.store.tables import SCHEMA_VERSION, STORE_TABLES, SchemaVersion, core_table, utc_now


def _bind_accounts_to_organisations(conn: Connection) -> None:
    """v2: accounts may act for one edge developer or operator organisation."""
    for column in ("developer", "operator"):
        conn.exec_driver_sql(
            f"ALTER TABLE account ADD COLUMN {column} VARCHAR(64) NOT NULL DEFAULT ''"
        )


# Step from version N-1 to N, run inside the schema transaction; version 1 is the first schema.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {2: _bind_accounts_to_organisations}


def ensure_schema(database: Database) -> int:
    """Create missing tables and migrate to ``SCHEMA_VERSION``; returns the version found before."""
    return call_mapped(_ensure_schema, database)


def _ensure_schema(database: Database) -> int:
    version_table = core_table(SchemaVersion)
    with database.engine.connect() as conn:
        # The write lock also keeps several processes starting at once from racing on DDL.
        database.begin_write(conn)
        try:
            SQLModel.metadata.create_all(conn, tables=[core_table(t) for t in STORE_TABLES])
            found = conn.execute(select(func.max(version_table.c.version))).scalar()
            if found is not None and found > SCHEMA_VERSION:
                raise SchemaTooNew(
                    f"database schema version {found} is newer than this Portico supports "
                    f"({SCHEMA_VERSION}); upgrade Portico"
                )
            start = 1 if found is None else found + 1
            build_missing(conn)
            for version in range(start, SCHEMA_VERSION + 1):
                if version in MIGRATIONS and found is not None:
                    MIGRATIONS[version](conn)
                conn.execute(insert(version_table).values(version=version, applied_at=utc_now()))
            conn.exec_driver_sql("COMMIT")
        except BaseException:
            rollback_quietly(conn)
            raise
        finally:
            database.end_write()
    return found or 0
