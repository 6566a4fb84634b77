"""SQLModel tables of the store: accounts, revoked tokens, protobuf objects and the event log."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    CursorResult,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    inspect,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel

# Bump when what is stored changes form, with a migration step in app/store/schema.py where
# the change must be made at start. 3: the cluster manager's machine reservation is a counter
# (store_meta) instead of an object; it counts itself again from the specs on first use, so no
# step, but a replica of an older version must not write to a database of this one.
SCHEMA_VERSION = 3


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes on every backend (SQLite keeps no zone, so UTC is implied there)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("store timestamps must be timezone-aware")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# UTCDateTime as the SQLite driver itself reads and writes it, for the paths that skip
# SQLAlchemy (point reads, lists, writes, the event log): its text, UTC without a zone.


def sqlite_time(text: str) -> datetime:
    """A timestamp as SQLite holds it."""
    # Parsed with its zone spelled out: ``replace(tzinfo=UTC)`` on the parsed value costs
    # several times the parse, and a list of 1,000 objects spent a third of its time there.
    return datetime.fromisoformat(text + "+00:00")


def sqlite_text(moment: datetime) -> str:
    """``moment`` as SQLite holds it (SQLAlchemy's own DATETIME form, so both read each other's
    rows)."""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")


def utc_now() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


def _timestamp(**kwargs: Any) -> Any:
    return Field(sa_column=Column(UTCDateTime(), nullable=False, **kwargs))


def _name_type(length: int) -> Any:
    # Byte-wise ("C") order on PostgreSQL, as SQLite's BINARY collation: keys sort and match
    # prefixes the same on both backends whatever the database's locale.
    return String(length).with_variant(String(length, collation="C"), "postgresql")


# SQLite only gives INTEGER PRIMARY KEY columns autoincrement; PostgreSQL wants 64 bits.
_RevisionInt = BigInteger().with_variant(Integer(), "sqlite")


class Account(SQLModel, table=True):
    """A user or node that can log in; the password is stored only as a hash."""

    __tablename__ = "account"
    # AUTOINCREMENT: a deleted account's id (a token's subject) must never be handed out again.
    __table_args__ = {"sqlite_autoincrement": True}

    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(sa_column=Column(String(64), nullable=False, unique=True))
    password_hash: str
    role: str
    enabled: bool = True
    # The edge organisation the account acts for ("" = none: the global view); see schema v2.
    developer: str = Field(
        default="", sa_column=Column(String(64), nullable=False, server_default="")
    )
    operator: str = Field(
        default="", sa_column=Column(String(64), nullable=False, server_default="")
    )
    created_at: datetime = _timestamp()
    updated_at: datetime = _timestamp()


class RevokedToken(SQLModel, table=True):
    """A token refused until it would have expired anyway (then it can be purged)."""

    __tablename__ = "revoked_token"

    jti: str = Field(sa_column=Column(String(128), primary_key=True))
    expires_at: datetime = _timestamp(index=True)


class StoredObject(SQLModel, table=True):
    """One protobuf object; ``revision`` is the log revision of its last write."""

    __tablename__ = "stored_object"

    kind: str = Field(sa_column=Column(_name_type(128), primary_key=True))
    key: str = Field(sa_column=Column(_name_type(512), primary_key=True))
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    revision: int = Field(sa_column=Column(BigInteger, nullable=False))
    created_at: datetime = _timestamp()
    updated_at: datetime = _timestamp()


class EventLogEntry(SQLModel, table=True):
    """One write in the append-only event log; ``revision`` is global and only grows."""

    __tablename__ = "event_log"
    # AUTOINCREMENT: SQLite must never reuse a revision after the log is compacted.
    __table_args__ = (
        Index("ix_event_log_kind_revision", "kind", "revision"),
        {"sqlite_autoincrement": True},
    )

    revision: int | None = Field(
        default=None, sa_column=Column(_RevisionInt, primary_key=True, autoincrement=True)
    )
    kind: str = Field(sa_column=Column(_name_type(128), nullable=False))
    key: str = Field(sa_column=Column(_name_type(512), nullable=False))
    type: str = Field(sa_column=Column(String(16), nullable=False))
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    at: datetime = _timestamp(index=True)


class SchemaVersion(SQLModel, table=True):
    """Each schema version applied to this database, so later releases know what to migrate."""

    __tablename__ = "schema_version"

    version: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    applied_at: datetime = _timestamp()


class StoreMeta(SQLModel, table=True):
    """Named integers the store keeps about itself (e.g. how far the log was compacted)."""

    __tablename__ = "store_meta"

    name: str = Field(sa_column=Column(String(64), primary_key=True))
    value: int = Field(sa_column=Column(BigInteger, nullable=False))


class LoginAttempt(SQLModel, table=True):
    """Failed logins counted under one throttle key (a user at an address, or an address), so
    every worker and replica sees the same counts. A new table: created on start by any
    version that knows it, ignored by older ones, so it needs no schema version."""

    __tablename__ = "login_attempt"

    key: str = Field(sa_column=Column(String(200), primary_key=True))
    failures: int = Field(sa_column=Column(Integer, nullable=False))
    window_start: datetime = _timestamp()
    locked_until: datetime = _timestamp()
    # Lockouts in a row: each one lasts twice as long as the one before.
    strikes: int = Field(sa_column=Column(Integer, nullable=False))
    last_failure: datetime = _timestamp(index=True)


class IdempotencyRecord(SQLModel, table=True):
    """The first outcome of a call made with an idempotency key, kept until ``expires_at`` so a
    repeat gets it again. A new table, created on start like ``login_attempt``."""

    __tablename__ = "idempotency_record"

    # The account that made the call ("" for anonymous calls) and the key it chose.
    caller: str = Field(sa_column=Column(String(64), primary_key=True))
    key: str = Field(sa_column=Column(String(255), primary_key=True))
    method: str = Field(sa_column=Column(String(255), nullable=False))
    # SHA-256 of the method and the request's deterministic serialization: the same key with
    # another request is refused.
    request_hash: str = Field(sa_column=Column(String(64), nullable=False))
    # 0 (OK) with the serialized reply, or an error code with its serialized google.rpc.Status.
    code: int = Field(sa_column=Column(Integer, nullable=False))
    outcome: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    created_at: datetime = _timestamp()
    expires_at: datetime = _timestamp(index=True)


class RateBucket(SQLModel, table=True):
    """The tokens left in one caller's rate limit bucket (app/store/rate_buckets.py), shared by
    every worker and replica. A new table, created on start like ``login_attempt``."""

    __tablename__ = "rate_bucket"

    key: str = Field(sa_column=Column(String(320), primary_key=True))
    tokens: float = Field(sa_column=Column(Float, nullable=False))
    # Seconds since the epoch of the last take: the bucket has refilled since then.
    updated_at: float = Field(sa_column=Column(Float, nullable=False, index=True))


class ObjectIndex(SQLModel, table=True):
    """One value of a secondary index of a kind (app.store.indexes): the object ``key`` of
    ``kind`` holds ``value`` under index ``name``. A new table, created on start."""

    __tablename__ = "object_index"
    # Rewriting one object's rows finds them by its key.
    __table_args__ = (Index("ix_object_index_kind_key", "kind", "key"),)

    kind: str = Field(sa_column=Column(_name_type(128), primary_key=True))
    name: str = Field(sa_column=Column(String(64), primary_key=True))
    value: str = Field(sa_column=Column(_name_type(512), primary_key=True))
    key: str = Field(sa_column=Column(_name_type(512), primary_key=True))


STORE_TABLES = (
    Account,
    RevokedToken,
    StoredObject,
    EventLogEntry,
    SchemaVersion,
    StoreMeta,
    LoginAttempt,
    IdempotencyRecord,
    ObjectIndex,
    RateBucket,
)
COMPACTED_REVISION = "compacted_revision"


def core_table(model: type[SQLModel]) -> Table:
    """The Core table a table model maps (its ``__table__``, which SQLModel leaves untyped)."""
    table = inspect(model).local_table
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not a table model")
    return table


def inserted_id(result: CursorResult[Any]) -> int:
    """The primary key a single-row INSERT generated."""
    key = result.inserted_primary_key
    if key is None:
        raise RuntimeError("the INSERT generated no primary key")
    return int(key[0])
