"""Secondary indexes: objects found by a value in their data, kept in step with every write and
filled from the objects already stored when an index is declared later."""

from __future__ import annotations

import pytest

from app.store import ObjectStore
from app.store.indexes import INDEXES, define_index
from tests.store.conftest import run

KIND = "test.tagged"


def _tags(data: bytes) -> list[str]:
    return [tag for tag in data.decode().split(",") if tag]


define_index(KIND, "tag", _tags)


def test_writes_keep_the_index_in_step(with_store):
    async def body(store: ObjectStore):
        await store.create(KIND, "a", b"red,blue")
        await store.create(KIND, "b", b"blue")
        async with store.transaction() as tx:
            await tx.create(KIND, "c", b"red")
            await tx.update(KIND, "a", b"green")
        assert [r.key for r in await store.list_where(KIND, "tag", "red")] == ["c"]
        assert [r.key for r in await store.list_where(KIND, "tag", "blue")] == ["b"]
        assert [r.key for r in await store.list_where(KIND, "tag", "green")] == ["a"]
        await store.delete(KIND, "b")
        assert await store.list_where(KIND, "tag", "blue") == []
        with pytest.raises(ValueError, match="no index 'colour'"):
            await store.list_where(KIND, "colour", "red")

    with_store(body)


def test_a_failed_write_leaves_no_index_row(with_store):
    async def body(store: ObjectStore):
        await store.create(KIND, "a", b"red")
        with pytest.raises(RuntimeError):
            async with store.transaction() as tx:
                await tx.create(KIND, "b", b"red")
                raise RuntimeError("undone")
        assert [r.key for r in await store.list_where(KIND, "tag", "red")] == ["a"]

    with_store(body)


def test_an_index_declared_later_is_filled_from_what_is_stored(store_url):
    late = "test.late"

    async def before(store: ObjectStore):
        await store.create(late, "x", b"old")
        await store.create(late, "y", b"new")

    async def after(store: ObjectStore):
        assert [r.key for r in await store.list_where(late, "tag", "old")] == ["x"]
        await store.update(late, "x", b"new")
        assert [r.key for r in await store.list_where(late, "tag", "new")] == ["x", "y"]

    async def scenario() -> None:
        async with ObjectStore.open(store_url) as store:
            await before(store)
        define_index(late, "tag", _tags)
        try:
            async with ObjectStore.open(store_url) as store:
                await after(store)
        finally:
            INDEXES.pop(late)

    run(scenario())
