"""Accounts and revoked tokens, as the auth service uses them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.store import AlreadyExists, NotFound, ObjectStore


def test_an_account_is_created_found_changed_and_deleted(with_store):
    async def body(store: ObjectStore):
        created = await store.accounts.create("alice", "hash-1", "admin")
        assert created.id is not None and created.enabled
        assert (await store.accounts.get("alice")).password_hash == "hash-1"
        assert (await store.accounts.get_by_id(created.id)).username == "alice"
        assert await store.accounts.get("nobody") is None
        assert await store.accounts.get_by_id(created.id + 1000) is None

        changed = await store.accounts.update("alice", role="viewer", enabled=False)
        assert (changed.role, changed.enabled, changed.password_hash) == ("viewer", False, "hash-1")
        assert changed.updated_at >= created.updated_at
        assert not (await store.accounts.get("alice")).enabled

        await store.accounts.delete("alice")
        assert await store.accounts.get("alice") is None

    with_store(body)


def test_an_account_read_by_id_is_the_account_read_by_name(with_store):
    """The id lookup rechecks every cached token; on SQLite it reads on the loop, and must
    give the same account, typed alike, as the pooled read."""

    async def body(store: ObjectStore):
        created = await store.accounts.create(
            "alice", "hash-1", "operator", developer="dev-org", operator="op-org"
        )
        await store.accounts.update("alice", enabled=False)
        by_name = await store.accounts.get("alice")
        by_id = await store.accounts.get_by_id(created.id)
        assert by_id is not None and by_name is not None
        assert by_id.model_dump() == by_name.model_dump()
        assert by_id.enabled is False and by_id.created_at.tzinfo is not None

    with_store(body)


def test_usernames_are_unique_and_missing_accounts_are_not_found(with_store):
    async def body(store: ObjectStore):
        await store.accounts.create("alice", "h", "admin")
        with pytest.raises(AlreadyExists, match="alice"):
            await store.accounts.create("alice", "other", "viewer")
        with pytest.raises(NotFound):
            await store.accounts.update("bob", enabled=False)
        with pytest.raises(NotFound):
            await store.accounts.delete("bob")

    with_store(body)


def test_accounts_are_listed_by_username(with_store):
    async def body(store: ObjectStore):
        for name in ("carol", "alice", "bob"):
            await store.accounts.create(name, "h", "viewer")
        assert [a.username for a in await store.accounts.list()] == ["alice", "bob", "carol"]

    with_store(body)


def test_a_deleted_accounts_id_is_never_given_to_another(with_store):
    async def body(store: ObjectStore):
        first = await store.accounts.create("alice", "h", "admin")
        await store.accounts.delete("alice")
        second = await store.accounts.create("mallory", "h", "admin")
        # Tokens name the account id: an old token must not become the new account's.
        assert second.id != first.id

    with_store(body)


def test_revoked_tokens_are_refused_until_purged_after_expiry(with_store):
    async def body(store: ObjectStore):
        now = datetime.now(UTC)
        await store.revocations.revoke("expired", now - timedelta(seconds=1))
        await store.revocations.revoke("current", now + timedelta(hours=1))
        await store.revocations.revoke("current", now + timedelta(hours=1))  # idempotent
        assert await store.revocations.is_revoked("expired")
        assert await store.revocations.is_revoked("current")
        assert not await store.revocations.is_revoked("never")

        assert await store.revocations.purge_expired() == 1
        assert not await store.revocations.is_revoked("expired")
        assert await store.revocations.is_revoked("current")

    with_store(body)
