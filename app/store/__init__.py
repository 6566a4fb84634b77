"""Persistent state: protobuf objects with revisions, an event log with watches, accounts.

SQLite in the data directory by default; a ``postgresql://`` URL lets several Portico processes
share one database and act as one system, with background work on one elected leader.
"""

from __future__ import annotations

from app.store.engine import create_store_engine, make_private_folder, normalize_url
from app.store.errors import (
    AlreadyExists,
    Conflict,
    NotFound,
    OutOfRange,
    SchemaTooNew,
    StoreError,
    Unavailable,
    lasting_refusal,
)
from app.store.idempotency import StoredOutcome
from app.store.leader import LeaderElection
from app.store.objects import ObjectStore, Record
from app.store.tables import SCHEMA_VERSION, Account, RevokedToken
from app.store.transactions import Reader, Transaction, Writer
from app.store.turn_lock import mark_background
from app.store.watch import Commit, Event, EventType

__all__ = [
    "SCHEMA_VERSION",
    "Account",
    "AlreadyExists",
    "Commit",
    "Conflict",
    "Event",
    "EventType",
    "LeaderElection",
    "NotFound",
    "ObjectStore",
    "OutOfRange",
    "Reader",
    "Record",
    "RevokedToken",
    "SchemaTooNew",
    "StoreError",
    "StoredOutcome",
    "Transaction",
    "Unavailable",
    "Writer",
    "create_store_engine",
    "lasting_refusal",
    "make_private_folder",
    "mark_background",
    "normalize_url",
]
