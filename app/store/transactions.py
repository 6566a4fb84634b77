"""A transaction's view of the store: reads and writes that commit together or not at all,
and the block :meth:`app.store.objects.ObjectStore.transaction` opens around one."""

from __future__ import annotations

import functools
from datetime import datetime
from types import TracebackType
from typing import Protocol

from app.observe.timing import instrument
from app.store.counters import add_to_counter, read_counter, set_counter
from app.store.database import Database
from app.store.errors import AlreadyExists
from app.store.records import (
    Message,
    Record,
    as_bytes,
    delete_record,
    event_of,
    insert_record,
    select_record,
    select_records,
    update_record,
)
from app.store.runner import TransactionRunner
from app.store.tables import utc_now
from app.store.watch import Event, EventType, RevisionFeed


class Reader(Protocol):
    """What reading code needs: the store itself or a transaction."""

    async def get(self, kind: str, key: str) -> Record | None: ...

    async def list(self, kind: str, prefix: str = "") -> list[Record]: ...


class Writer(Reader, Protocol):
    """What writing code needs: a transaction (or the store, one write at a time)."""

    async def create(self, kind: str, key: str, data: bytes | Message) -> Record: ...

    async def update(self, kind: str, key: str, data: bytes | Message) -> Record: ...

    async def delete(self, kind: str, key: str) -> Record: ...


class Transaction:
    """Reads and writes applied atomically: all of them commit, or none does.

    It holds the store's write lock until it ends, so keep it short: no network calls inside.
    Nobody else can write meanwhile, so an object it has read or written is not read again.
    """

    def __init__(self, runner: TransactionRunner) -> None:
        self._runner = runner
        # The revision of the last write so far (0 before any): watchers are woken up to it.
        self.revision = 0
        self.written: list[Event] = []  # what the writes appended to the event log
        # Objects as this transaction last saw them (None: known to be absent).
        self._known: dict[tuple[str, str], Record | None] = {}
        self._now: datetime | None = None

    def _time(self) -> datetime:
        """The moment of every write of this transaction: its events share it, which is how a
        watcher of commits (``ObjectStore.watch_commits``) tells one transaction from the next."""
        if self._now is None:
            self._now = utc_now()
        return self._now

    def _wrote(self, record: Record, type_: EventType) -> None:
        self.revision = record.revision
        self.written.append(event_of(record, type_))
        self._known[(record.kind, record.key)] = None if type_ is EventType.DELETED else record

    async def get(self, kind: str, key: str) -> Record | None:
        """The object, as this transaction sees it."""
        if (kind, key) in self._known:
            return self._known[(kind, key)]
        record = await self._runner.run(select_record, kind, key)
        self._known[(kind, key)] = record
        return record

    async def list(self, kind: str, prefix: str = "") -> list[Record]:
        """Objects of ``kind`` with keys starting with ``prefix``, as this transaction sees them."""
        records = await self._runner.run(select_records, kind, prefix)
        self._known.update(((r.kind, r.key), r) for r in records)
        return records

    async def create(self, kind: str, key: str, data: bytes | Message) -> Record:
        """Create an object; ``AlreadyExists`` if the key is taken."""
        if self._known.get((kind, key)) is not None:
            raise AlreadyExists(f"{kind} {key!r} already exists")
        record = await self._runner.run(insert_record, kind, key, as_bytes(data), self._time())
        self._wrote(record, EventType.CREATED)
        return record

    async def update(
        self,
        kind: str,
        key: str,
        data: bytes | Message,
        expected_revision: int | None = None,
    ) -> Record:
        """Replace an object's data; ``NotFound`` if missing, ``Conflict`` on a stale revision."""
        record, changed = await self._runner.run(
            update_record,
            kind,
            key,
            as_bytes(data),
            expected_revision,
            self._time(),
            self._known.get((kind, key)),
        )
        if changed:
            self._wrote(record, EventType.UPDATED)
        return record

    async def delete(self, kind: str, key: str, expected_revision: int | None = None) -> Record:
        """Delete an object; ``NotFound`` if missing, ``Conflict`` on a stale revision."""
        record = await self._runner.run(
            delete_record, kind, key, expected_revision, self._time(), self._known.get((kind, key))
        )
        self._wrote(record, EventType.DELETED)
        return record

    # Counters (app/store/counters.py): one statement each, no event.

    async def counter(self, name: str) -> int | None:
        """The counter ``name``, or None if it was never set."""
        return await self._runner.run(read_counter, name)

    async def add_to_counter(self, name: str, delta: int) -> int | None:
        """Add ``delta`` to the counter ``name``; its new value, or None (nothing changed) if it
        was never set: then the caller knows what it should be and sets it."""
        return await self._runner.run(add_to_counter, name, delta)

    async def set_counter(self, name: str, value: int) -> None:
        """Set the counter ``name`` to ``value`` (starting it if it was never set)."""
        await self._runner.run(set_counter, name, value)


class TransactionBlock:
    """The block of :meth:`ObjectStore.transaction`: the database's transaction as a
    :class:`Transaction`, whose writes watchers learn of once it has committed. A class rather
    than a generator-based context manager, as every write passes here."""

    __slots__ = ("_block", "_database", "_feed", "_tx")

    def __init__(self, database: Database, feed: RevisionFeed) -> None:
        self._database = database
        self._feed = feed
        self._block = database.transaction()

    async def __aenter__(self) -> Transaction:
        self._tx = Transaction(await self._block.__aenter__())
        return self._tx

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        suppressed = await self._block.__aexit__(kind, error, traceback)
        if kind is None:  # committed
            tx = self._tx
            self._database.after_commit(
                functools.partial(self._feed.advance, tx.revision, tx.written)
            )
        return suppressed


instrument(Transaction, prefix="transaction.")
