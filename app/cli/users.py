"""``portico users``: accounts in the configured store, each change on the audit log."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import logging
import sys

from app.auth import accounts
from app.auth.accounts import AccountError
from app.auth.passwords import PasswordHasher
from app.cli.flags import settings_or_exit
from app.observe.logs import audit_to_file, configure_logging
from app.settings.config import Settings
from app.store import Account, ObjectStore, StoreError, make_private_folder

AUDIT_LOG = "audit.log"  # in the data folder: what `portico users` changed, and who


def _read_password(args: argparse.Namespace) -> str:
    """The password from stdin (``--password-stdin``), else asked twice on the terminal."""
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
        if not password:
            raise SystemExit("portico: no password given: stdin was empty (--password-stdin)")
        return password
    if not sys.stdin.isatty():
        # Reading a pipe nobody asked us to read would take whatever it holds, or nothing.
        raise SystemExit(
            "portico: no password given: there is no terminal to ask for it on. Pipe it in "
            f"with --password-stdin, e.g. printf '%s\\n' \"$PASSWORD\" | portico users "
            f"{args.action} {args.name}{_role_flag(args)} --password-stdin"
        )
    first = getpass.getpass("Password: ")
    if getpass.getpass("Again: ") != first:
        raise SystemExit("portico: the passwords differ")
    return first


def _role_flag(args: argparse.Namespace) -> str:
    role = getattr(args, "role", None)
    return f" --role {role}" if role else ""


def users(args: argparse.Namespace) -> None:
    """Run the ``users`` action ``args`` names."""
    settings = settings_or_exit(args)
    if not logging.getLogger().handlers:  # not when embedded: a host's logging stays its own
        # Warnings go to stderr; the audit line of each change to DATA_DIR/audit.log, so that
        # the command prints its result alone.
        configure_logging(settings.log_format, logging.WARNING)
        make_private_folder(settings.data_dir)
        audit_to_file(settings.data_dir / AUDIT_LOG, settings.log_format)
    password = ""
    if args.action in {"add", "set-password"}:
        password = _read_password(args)
    try:
        asyncio.run(_users_action(settings, args, password))
    except (AccountError, StoreError) as exc:
        raise SystemExit(f"portico: {exc}") from None


async def _users_action(settings: Settings, args: argparse.Namespace, password: str) -> None:
    make_private_folder(settings.data_dir)
    store = await asyncio.to_thread(ObjectStore.open, settings.effective_database_url)
    hasher = PasswordHasher(cost=settings.password_hash_cost)
    async with store:
        if args.action == "add":
            account = await accounts.add_account(
                store,
                hasher,
                args.name,
                args.role,
                password,
                developer=args.developer or "",
                operator=args.operator or "",
            )
            print(f"added {account.username} ({account.role}{_binding(account)})")
        elif args.action == "list":
            print("USERNAME\tROLE\tSTATE\tTENANT")
            for account in await store.accounts.list():
                state = "enabled" if account.enabled else "disabled"
                binding = _binding(account, sep="\t")
                print(f"{account.username}\t{account.role}\t{state}{binding}")
        elif args.action == "set-password":
            await accounts.set_password(store, hasher, args.name, password)
            print(f"password of {args.name} changed")
        else:
            enabled = args.action == "enable"
            await accounts.set_enabled(store, args.name, enabled)
            print(f"{args.name} {'enabled' if enabled else 'disabled'}")


def _binding(account: Account, sep: str = ", ") -> str:
    """``, developer AcmeApps`` for an account bound to an edge organisation, else ``""``."""
    for what in ("developer", "operator"):
        if getattr(account, what):
            return f"{sep}{what} {getattr(account, what)}"
    return ""
