"""Accounts and revoked tokens, as the auth service uses them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.store import AlreadyExists, NotFound, ObjectStore


def test_an_account_is_created_found_changed_and_deleted(with_store):
    async def body(store: ObjectStore):
        created = await store.create_account("alice", "hash-1", "admin")
        assert created.id is not None and created.enabled
        assert (await store.get_account("alice")).password_hash == "hash-1"
        assert (await store.get_account_by_id(created.id)).username == "alice"
        assert await store.get_account("nobody") is None
        assert await store.get_account_by_id(created.id + 1000) is None

        changed = await store.update_account("alice", role="viewer", enabled=False)
        assert (changed.role, changed.enabled, changed.password_hash) == ("viewer", False, "hash-1")
        assert changed.updated_at >= created.updated_at
        assert not (await store.get_account("alice")).enabled

        await store.delete_account("alice")
        assert await store.get_account("alice") is None

    with_store(body)


def test_an_account_read_by_id_is_the_account_read_by_name(with_store):
    """The id lookup rechecks every cached token; on SQLite it reads on the loop, and must
    give the same account, typed alike, as the pooled read."""

    async def body(store: ObjectStore):
        created = await store.create_account(
            "alice", "hash-1", "operator", developer="dev-org", operator="op-org"
        )
        await store.update_account("alice", enabled=False)
        by_name = await store.get_account("alice")
        by_id = await store.get_account_by_id(created.id)
        assert by_id is not None and by_name is not None
        assert by_id.model_dump() == by_name.model_dump()
        assert by_id.enabled is False and by_id.created_at.tzinfo is not None

    with_store(body)


def test_usernames_are_unique_and_missing_accounts_are_not_found(with_store):
    async def body(store: ObjectStore):
        await store.create_account("alice", "h", "admin")
        with pytest.raises(AlreadyExists, match="alice"):
            await store.create_account("alice", "other", "viewer")
        with pytest.raises(NotFound):
            await store.update_account("bob", enabled=False)
        with pytest.raises(NotFound):
            await store.delete_account("bob")

    with_store(body)


def test_accounts_are_listed_by_username(with_store):
    async def body(store: ObjectStore):
        for name in ("carol", "alice", "bob"):
            await store.create_account(name, "h", "viewer")
        assert [a.username for a in await store.list_accounts()] == ["alice", "bob", "carol"]

    with_store(body)


def test_a_deleted_accounts_id_is_never_given_to_another(with_store):
    async def body(store: ObjectStore):
        first = await store.create_account("alice", "h", "admin")
        await store.delete_account("alice")
        second = await store.create_account("mallory", "h", "admin")
        # Tokens name the account id: an old token must not become the new account's.
        assert second.id != first.id

    with_store(body)


def test_revoked_tokens_are_refused_until_purged_after_expiry(with_store):
    async def body(store: ObjectStore):
        now = datetime.now(UTC)
        await store.revoke_token("expired", now - timedelta(seconds=1))
        await store.revoke_token("current", now + timedelta(hours=1))
        await store.revoke_token("current", now + timedelta(hours=1))  # idempotent
        assert await store.is_revoked("expired")
        assert await store.is_revoked("current")
        assert not await store.is_revoked("never")

        assert await store.purge_expired_revocations() == 1
        assert not await store.is_revoked("expired")
        assert await store.is_revoked("current")

    with_store(body)
