"""Account administration behind ``portico users``: add, list, disable, enable, set a password."""

from __future__ import annotations

import asyncio

from app.auth.gate import USERNAME, audit
from app.auth.passwords import MAX_PASSWORD_BYTES, MIN_PASSWORD_BYTES, PasswordHasher
from app.calls.callers import Role
from app.store import Account, ObjectStore

MAX_ORGANISATION = 63


class AccountError(ValueError):
    """The request cannot be carried out; the message says why."""


def check_username(username: str) -> None:
    if not USERNAME.match(username):
        raise AccountError(
            f"username {username!r} must be 3-24 characters of letters, digits, - and _"
        )


def check_password(password: str) -> None:
    if not MIN_PASSWORD_BYTES <= len(password.encode()) <= MAX_PASSWORD_BYTES:
        raise AccountError(f"password must be {MIN_PASSWORD_BYTES}-{MAX_PASSWORD_BYTES} bytes long")


def check_role(role: str) -> None:
    if role not in {r.value for r in Role}:
        raise AccountError(f"role {role!r} must be one of {', '.join(r.value for r in Role)}")


def check_organisation(what: str, name: str) -> None:
    # The edge controller's object-name length; the name itself need not exist yet.
    if name != name.strip() or len(name) > MAX_ORGANISATION or not name.isprintable():
        raise AccountError(
            f"{what} {name!r} must be at most {MAX_ORGANISATION} printable characters without "
            "leading or trailing spaces"
        )


async def add_account(
    store: ObjectStore,
    hasher: PasswordHasher,
    username: str,
    role: str,
    password: str,
    *,
    developer: str = "",
    operator: str = "",
) -> Account:
    """Create an enabled account, bound to at most one edge developer or operator
    organisation; AccountError for bad input, AlreadyExists for a taken name."""
    check_username(username)
    check_role(role)
    check_password(password)
    check_organisation("developer", developer)
    check_organisation("operator", operator)
    if developer and operator:
        raise AccountError("an account acts for one organisation: a developer or an operator")
    password_hash = await asyncio.to_thread(hasher.hash, password)
    account = await store.accounts.create(
        username, password_hash, role, developer=developer, operator=operator
    )
    audit.info("account added: user=%s role=%s", account.username, account.role)
    return account


async def set_password(
    store: ObjectStore, hasher: PasswordHasher, username: str, password: str
) -> Account:
    """Replace an account's password; the tokens issued before are refused from then on (within
    a second in every running server, as a disabled account's: their password stamp is no longer
    the account's)."""
    check_password(password)
    password_hash = await asyncio.to_thread(hasher.hash, password)
    account = await store.accounts.update(username, password_hash=password_hash)
    audit.info("account password changed: user=%s", account.username)
    return account


async def set_enabled(store: ObjectStore, username: str, enabled: bool) -> Account:
    """Enable or disable an account; a disabled account's tokens are refused at once."""
    account = await store.accounts.update(username, enabled=enabled)
    audit.info("account %s: user=%s", "enabled" if enabled else "disabled", account.username)
    return account
