"""Accounts and revoked tokens: the typed tables the auth service reads and writes.

:class:`Accounts` and :class:`Revocations` are the store's (``store.accounts``,
``store.revocations``); the functions below them are their statements, run on a connection.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from app.observe.timing import instrument
from app.store.database import Database
from app.store.errors import AlreadyExists, NotFound
from app.store.tables import (
    Account,
    RevokedToken,
    core_table,
    inserted_id,
    sqlite_time,
    utc_now,
)

_accounts = core_table(Account)
_revoked = core_table(RevokedToken)

# The columns Accounts.update may change; the rest identify the account or are kept by the store.
ACCOUNT_CHANGEABLE = frozenset({"password_hash", "role", "enabled"})


def _account(row: Any) -> Account:
    return Account(**row._mapping)


def insert_account(
    conn: Connection,
    username: str,
    password_hash: str,
    role: str,
    enabled: bool,
    now: datetime,
    organisations: tuple[str, str] = ("", ""),
) -> Account:
    """Add an account (``organisations``: its developer and operator); ``AlreadyExists`` if
    the username is taken."""
    if select_account(conn, username) is not None:
        raise AlreadyExists(f"account {username!r} already exists")
    values: dict[str, Any] = {
        "username": username,
        "password_hash": password_hash,
        "role": role,
        "enabled": enabled,
        "developer": organisations[0],
        "operator": organisations[1],
        "created_at": now,
        "updated_at": now,
    }
    account_id = inserted_id(conn.execute(insert(_accounts).values(values)))
    return Account(id=account_id, **values)


def select_account(conn: Connection, username: str) -> Account | None:
    """The account called ``username``, if any."""
    row = conn.execute(select(_accounts).where(_accounts.c.username == username)).first()
    return None if row is None else _account(row)


def select_account_by_id(conn: Connection, account_id: int) -> Account | None:
    """The account with ``account_id``, if any."""
    row = conn.execute(select(_accounts).where(_accounts.c.id == account_id)).first()
    return None if row is None else _account(row)


# select_account_by_id as one statement for the inline SQLite reader, and its row as an Account.
SQLITE_ACCOUNT_BY_ID = (
    "SELECT id, username, password_hash, role, enabled, developer, operator, created_at, "
    "updated_at FROM account WHERE id = ?"
)


def sqlite_account(row: tuple[Any, ...]) -> Account:
    """An account from a row of ``SQLITE_ACCOUNT_BY_ID``, typed as the pooled read types it."""
    id_, username, password_hash, role, enabled, developer, operator, created, updated = row
    return Account(
        id=id_,
        username=username,
        password_hash=password_hash,
        role=role,
        enabled=bool(enabled),
        developer=developer,
        operator=operator,
        created_at=sqlite_time(created),
        updated_at=sqlite_time(updated),
    )


def select_accounts(conn: Connection) -> list[Account]:
    """Every account, ordered by username."""
    return [_account(row) for row in conn.execute(select(_accounts).order_by(_accounts.c.username))]


def change_account(
    conn: Connection, username: str, changes: dict[str, Any], now: datetime
) -> Account:
    """Apply ``changes`` (see ``ACCOUNT_CHANGEABLE``) to an account; ``NotFound`` if missing."""
    unknown = set(changes) - ACCOUNT_CHANGEABLE
    if unknown:
        raise ValueError(f"cannot change account field(s): {', '.join(sorted(unknown))}")
    result = conn.execute(
        update(_accounts).where(_accounts.c.username == username).values(**changes, updated_at=now)
    )
    if result.rowcount == 0:
        raise NotFound(f"account {username!r} not found")
    account = select_account(conn, username)
    assert account is not None
    return account


def remove_account(conn: Connection, username: str) -> Account:
    """Delete an account and return it; ``NotFound`` if missing."""
    account = select_account(conn, username)
    if account is None:
        raise NotFound(f"account {username!r} not found")
    conn.execute(delete(_accounts).where(_accounts.c.id == account.id))
    return account


def insert_revocation(conn: Connection, jti: str, expires_at: datetime) -> None:
    """Refuse token ``jti`` until ``expires_at``; revoking twice keeps the later expiry."""
    known = conn.execute(select(_revoked.c.expires_at).where(_revoked.c.jti == jti)).scalar()
    if known is None:
        conn.execute(insert(_revoked).values(jti=jti, expires_at=expires_at))
    elif known < expires_at:
        conn.execute(update(_revoked).where(_revoked.c.jti == jti).values(expires_at=expires_at))


def revocation_exists(conn: Connection, jti: str) -> bool:
    """Whether token ``jti`` has been revoked."""
    return conn.execute(select(_revoked.c.jti).where(_revoked.c.jti == jti)).first() is not None


def delete_expired_revocations(conn: Connection, now: datetime) -> int:
    """Forget revocations of tokens that have expired by ``now``; returns how many."""
    return conn.execute(delete(_revoked).where(_revoked.c.expires_at <= now)).rowcount


# revocation_exists as one statement for the inline SQLite reader.
SQLITE_IS_REVOKED = "SELECT 1 FROM revoked_token WHERE jti = ?"


class Accounts:
    """The users and nodes that can log in."""

    def __init__(self, database: Database) -> None:
        self._database = database

    async def create(
        self,
        username: str,
        password_hash: str,
        role: str,
        *,
        enabled: bool = True,
        developer: str = "",
        operator: str = "",
    ) -> Account:
        """Add an account (bound to an edge developer or operator organisation, if given);
        ``AlreadyExists`` if the username is taken."""
        return await self._database.write(
            insert_account,
            username,
            password_hash,
            role,
            enabled,
            utc_now(),
            (developer, operator),
        )

    async def get(self, username: str) -> Account | None:
        """The account called ``username``, or None."""
        return await self._database.read(select_account, username)

    async def get_by_id(self, account_id: int) -> Account | None:
        """The account with ``account_id``, or None. On SQLite a query on the loop, as
        :meth:`Revocations.is_revoked`: every cached token is rechecked with both once a second,
        and through the pool and a worker thread the read cost ~0.5 ms of CPU (a thousand
        tokens in use: half of every second)."""
        rows = self._database.read_inline(SQLITE_ACCOUNT_BY_ID, (account_id,))
        if rows is not None:
            return sqlite_account(rows[0]) if rows else None
        return await self._database.read(select_account_by_id, account_id)

    async def list(self) -> builtins.list[Account]:  # builtins: this class has its own list
        """Every account, ordered by username."""
        return await self._database.read(select_accounts)

    async def update(
        self,
        username: str,
        *,
        password_hash: str | None = None,
        role: str | None = None,
        enabled: bool | None = None,
    ) -> Account:
        """Change the given fields of an account; ``NotFound`` if missing."""
        changes = {
            name: value
            for name, value in (
                ("password_hash", password_hash),
                ("role", role),
                ("enabled", enabled),
            )
            if value is not None
        }
        return await self._database.write(change_account, username, changes, utc_now())

    async def delete(self, username: str) -> Account:
        """Delete an account and return it; ``NotFound`` if missing."""
        return await self._database.write(remove_account, username)


class Revocations:
    """Tokens refused before they expire (logged out, or their account changed)."""

    def __init__(self, database: Database) -> None:
        self._database = database

    async def revoke(self, jti: str, expires_at: datetime) -> None:
        """Refuse the token ``jti`` until ``expires_at``."""
        await self._database.write(insert_revocation, jti, expires_at)

    async def is_revoked(self, jti: str) -> bool:
        """Whether the token ``jti`` was revoked."""
        rows = self._database.read_inline(SQLITE_IS_REVOKED, (jti,))
        if rows is not None:
            return bool(rows)
        return await self._database.read(revocation_exists, jti)

    async def purge_expired(self, *, now: datetime | None = None) -> int:
        """Forget revocations of tokens that have expired anyway; returns how many."""
        return await self._database.write(delete_expired_revocations, now or utc_now())


# Timed as store operations (portico_store_operation_duration_seconds{operation}).
instrument(Accounts, prefix="account.")
instrument(Revocations, prefix="revocation.")
