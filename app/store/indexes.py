"""Secondary indexes: objects of a kind found by a value inside their data, not by their key.

A kind declares an index once (:func:`define_index`) with a function that reads the values to
index from an object's stored bytes. Every write of an object of that kind keeps its rows in the
``object_index`` table in the same transaction (rewritten only when the values change), and
:meth:`ObjectStore.list_where` reads the matching objects through it: rows read grow with the
matches, not with the kind. An index declared after objects of its kind were stored is filled
from them when the store next opens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, delete, insert, select

from app.store.tables import ObjectIndex, StoredObject, StoreMeta, core_table

_index = core_table(ObjectIndex)
_objects = core_table(StoredObject)
_meta = core_table(StoreMeta)

Extract = Callable[[bytes], Iterable[str]]


@dataclass(frozen=True)
class IndexDefinition:
    """Index ``name`` of ``kind``: ``values`` reads what to index from an object's bytes."""

    kind: str
    name: str
    values: Extract


# Declared at import time by the services that query them; kind -> name -> definition.
INDEXES: dict[str, dict[str, IndexDefinition]] = {}


def define_index(kind: str, name: str, values: Extract) -> IndexDefinition:
    """Declare (once per process) that objects of ``kind`` are indexed by ``values(data)``."""
    definition = IndexDefinition(kind, name, values)
    INDEXES.setdefault(kind, {})[name] = definition
    return definition


def _rows(kind: str, key: str, data: bytes | None) -> set[tuple[str, str]]:
    if data is None:
        return set()
    return {(d.name, v) for d in INDEXES[kind].values() for v in d.values(data)}


_DELETE_ROWS = delete(_index).where(
    _index.c.kind == bindparam("kind"), _index.c.key == bindparam("key")
)
_INSERT_ROW = insert(_index)


def reindex(conn: Connection, kind: str, key: str, old: bytes | None, new: bytes | None) -> None:
    """Keep the index rows of ``(kind, key)`` in step with a write from ``old`` to ``new`` data
    (None: absent). Kinds without indexes cost one dictionary lookup."""
    if kind not in INDEXES:
        return
    before, after = _rows(kind, key, old), _rows(kind, key, new)
    if before == after:
        return
    if before:
        conn.execute(_DELETE_ROWS, {"kind": kind, "key": key})
    if after:
        conn.execute(
            _INSERT_ROW,
            [{"kind": kind, "name": n, "value": v, "key": key} for n, v in sorted(after)],
        )


def keys_where(conn: Connection, kind: str, name: str, value: str) -> list[str]:
    """Keys of the ``kind`` objects whose index ``name`` holds ``value``, in key order."""
    query = (
        select(_index.c.key)
        .where(_index.c.kind == kind, _index.c.name == name, _index.c.value == value)
        .order_by(_index.c.key)
    )
    return list(conn.execute(query).scalars())


def build_missing(conn: Connection) -> None:
    """Fill every declared index not built in this database yet (inside the schema transaction)."""
    for kind, definitions in INDEXES.items():
        for name, definition in definitions.items():
            marker = f"index:{kind}:{name}"[:64]
            if conn.execute(select(_meta.c.name).where(_meta.c.name == marker)).first():
                continue
            conn.execute(delete(_index).where(_index.c.kind == kind, _index.c.name == name))
            stored = conn.execute(
                select(_objects.c.key, _objects.c.data).where(_objects.c.kind == kind)
            )
            rows = [
                {"kind": kind, "name": name, "value": value, "key": key}
                for key, data in stored
                for value in set(definition.values(data))
            ]
            if rows:
                conn.execute(insert(_index), rows)
            conn.execute(insert(_meta).values(name=marker, value=1))
