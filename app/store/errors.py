"""Errors raised by the store, each with the gRPC status code a servicer should abort with.

    StoreError                  INTERNAL
     ├── NotFound               NOT_FOUND        no object/account under that key
     ├── AlreadyExists          ALREADY_EXISTS   create of a key that exists
     ├── Conflict               ABORTED          expected revision did not match
     ├── Unavailable            UNAVAILABLE      database locked or unreachable; retry later
     ├── OutOfRange             OUT_OF_RANGE     watch from a revision the log no longer holds
     └── SchemaTooNew           FAILED_PRECONDITION  database written by a newer Portico

Database driver exceptions never leave the store: :func:`map_database_error` turns them into
one of these at the boundary (``raise mapped from exc``).
"""

from __future__ import annotations

import sqlite3
from typing import ClassVar

import grpc
import psycopg
from sqlalchemy import exc as sa_exc

DEFAULT_RETRY_AFTER = 1.0


class StoreError(Exception):
    """Base of every store error; ``code`` is the gRPC status to report."""

    code: ClassVar[grpc.StatusCode] = grpc.StatusCode.INTERNAL

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        # What the database driver said (hosts, users, SQL): for the log, never for a caller.
        self.detail = detail


class NotFound(StoreError):
    """The object or account does not exist."""

    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(StoreError):
    """An object or account with that key already exists."""

    code = grpc.StatusCode.ALREADY_EXISTS


class Conflict(StoreError):
    """An optimistic-concurrency check failed: the object changed since it was read."""

    code = grpc.StatusCode.ABORTED

    def __init__(
        self,
        message: str,
        *,
        expected_revision: int | None = None,
        actual_revision: int | None = None,
        detail: str = "",
    ) -> None:
        super().__init__(message, detail=detail)
        self.expected_revision = expected_revision
        self.actual_revision = actual_revision


class Unavailable(StoreError):
    """The database is busy or unreachable; the caller may retry after ``retry_after`` seconds."""

    code = grpc.StatusCode.UNAVAILABLE

    def __init__(
        self, message: str, *, retry_after: float = DEFAULT_RETRY_AFTER, detail: str = ""
    ) -> None:
        super().__init__(message, detail=detail)
        self.retry_after = retry_after


class OutOfRange(StoreError):
    """A watch asked for events the compacted log no longer holds."""

    code = grpc.StatusCode.OUT_OF_RANGE

    def __init__(self, message: str, *, compacted_revision: int) -> None:
        super().__init__(message)
        self.compacted_revision = compacted_revision


class SchemaTooNew(StoreError):
    """The database schema was written by a newer version of Portico."""

    code = grpc.StatusCode.FAILED_PRECONDITION


# What PostgreSQL says when it answers a connection and refuses it for a reason that waiting
# for it will not mend (the driver gives such refusals no SQLSTATE to tell them by).
_LASTING_REFUSALS = (
    "password authentication failed",
    "authentication failed",
    "does not exist",  # the database or the role
    "no pg_hba.conf entry",
    "permission denied",
)


def lasting_refusal(error: StoreError) -> bool:
    """Whether the database answered and refused for good (a wrong password, no such database
    or role), not merely did not answer yet (down, starting, restarting, unreachable)."""
    return any(phrase in error.detail for phrase in _LASTING_REFUSALS)


def map_database_error(exc: BaseException) -> StoreError | None:
    """The store error a driver exception stands for, or None if it is a bug to surface as is.

    The message is what a caller may read; the driver's own words go to ``detail`` only.
    """
    orig = exc.orig if isinstance(exc, sa_exc.DBAPIError) else exc
    said = (str(orig).strip() or type(orig).__name__)[:1000]
    if isinstance(orig, sqlite3.OperationalError):
        if "locked" in said or "busy" in said:
            return Unavailable("database is busy; retry shortly", detail=said)
        return Unavailable("database unavailable; retry shortly", detail=said)
    if isinstance(orig, psycopg.errors.LockNotAvailable):
        return Unavailable("database is busy (lock timeout); retry shortly", detail=said)
    if isinstance(orig, psycopg.errors.SerializationFailure | psycopg.errors.DeadlockDetected):
        return Unavailable(
            f"database transaction conflict ({orig.sqlstate}); retry shortly", detail=said
        )
    if isinstance(orig, psycopg.OperationalError | psycopg.InterfaceError):
        return Unavailable("database unavailable; retry shortly", detail=said)
    if isinstance(exc, sa_exc.TimeoutError):
        return Unavailable("no free database connection; retry shortly", detail=said)
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return Unavailable("database connection lost; retry shortly", detail=said)
    if isinstance(exc, sa_exc.IntegrityError):
        # Writes are serialised, so this is a race with a writer outside the store's rules.
        return Conflict("concurrent write conflict; retry", detail=said)
    return None
