"""Store errors: one gRPC code each, and driver exceptions mapped at the boundary."""

from __future__ import annotations

import sqlite3

import grpc
import psycopg
import pytest
from sqlalchemy import create_engine
from sqlalchemy import exc as sa_exc

from app.store import errors
from app.store.runner import rollback_quietly


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (errors.StoreError("x"), grpc.StatusCode.INTERNAL),
        (errors.NotFound("x"), grpc.StatusCode.NOT_FOUND),
        (errors.AlreadyExists("x"), grpc.StatusCode.ALREADY_EXISTS),
        (errors.Conflict("x", expected_revision=1, actual_revision=2), grpc.StatusCode.ABORTED),
        (errors.Unavailable("x"), grpc.StatusCode.UNAVAILABLE),
        (errors.OutOfRange("x", compacted_revision=3), grpc.StatusCode.OUT_OF_RANGE),
        (errors.SchemaTooNew("x"), grpc.StatusCode.FAILED_PRECONDITION),
    ],
)
def test_every_error_names_its_grpc_code(error, code):
    assert isinstance(error, errors.StoreError)
    assert error.code is code
    assert str(error) == error.message == "x"


def _wrapped(orig: Exception) -> sa_exc.DBAPIError:
    return sa_exc.OperationalError("SELECT 1", {}, orig)


@pytest.mark.parametrize(
    "driver_error",
    [
        _wrapped(sqlite3.OperationalError("database is locked")),
        sqlite3.OperationalError("database is locked"),
        _wrapped(psycopg.errors.LockNotAvailable("canceling statement due to lock timeout")),
        _wrapped(psycopg.OperationalError("connection refused")),
        sa_exc.TimeoutError("QueuePool limit reached"),
    ],
)
def test_busy_or_unreachable_databases_are_unavailable_with_a_retry_hint(driver_error):
    mapped = errors.map_database_error(driver_error)
    assert isinstance(mapped, errors.Unavailable)
    assert mapped.retry_after > 0


def test_errors_that_are_bugs_are_not_disguised():
    syntax = sa_exc.ProgrammingError("SELEC 1", {}, sqlite3.ProgrammingError("syntax error"))
    assert errors.map_database_error(syntax) is None


def test_rolling_back_a_connection_the_database_ended_is_quiet(tmp_path):
    """A connection the server ended mid-transaction (a database restarting) is one SQLAlchemy
    holds invalid: its ROLLBACK raised PendingRollbackError, which took the place of the
    COMMIT's own error (UNAVAILABLE) and answered the call INTERNAL."""
    engine = create_engine(f"sqlite:///{tmp_path / 'lost.db'}")
    with engine.connect() as conn:
        conn.exec_driver_sql("SELECT 1")  # a transaction begun
        conn.invalidate()  # what SQLAlchemy does with a connection the server closed
        rollback_quietly(conn)
    engine.dispose()
