"""Edge objects indexed by each field of their key (app.store.indexes).

A Show whose key names some fields but not all (every ClusterInst of one cloudlet, every App
of one organisation) reads the objects holding the first of those values through the index,
then filters them as before, instead of reading every object of the type. Values longer than
``MAX_VALUE`` are not indexed; a filter on one reads the whole type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from google.protobuf.message import Message

from app.services.edge.kinds import ALL_TYPES, EdgeType
from app.store.indexes import define_index

INDEX = "key_field"
MAX_VALUE = 256


def _leaves(key: Message, prefix: str = "") -> Iterator[str]:
    """``path=value`` for every set scalar field of ``key``, nested keys field by field."""
    for field, value in key.ListFields():
        if field.is_repeated:
            continue
        path = f"{prefix}{field.name}"
        if field.message_type is not None:
            yield from _leaves(value, f"{path}.")
        else:
            entry = f"{path}={value}"
            if len(entry) <= MAX_VALUE:
                yield entry


def entries(key: Message) -> list[str]:
    """What the index holds for an object with ``key``."""
    return list(_leaves(key))


def entry_for(key: Message) -> str | None:
    """The index entry a Show filtering on ``key`` can read through (a ``name`` if it names
    one: the most selective), or None when it names no indexed value."""
    leaves = entries(key)
    named = [leaf for leaf in leaves if leaf.split("=", 1)[0].rsplit(".", 1)[-1] == "name"]
    chosen = named or leaves
    return chosen[0] if chosen else None


def _indexer(kind: EdgeType) -> Callable[[bytes], list[str]]:
    def stored_entries(data: bytes) -> list[str]:
        return entries(kind.key_of(kind.parse(data)))

    return stored_entries


for _kind in ALL_TYPES:
    define_index(_kind.kind, INDEX, _indexer(_kind))
