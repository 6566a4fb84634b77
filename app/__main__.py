"""The ``portico`` command line (also ``python -m app``).

Every ``serve`` flag has a ``PORTICO_*`` environment variable (see ``app/config.py``); a flag
given on the command line wins over the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import getpass
import sys
from collections.abc import Sequence
from pathlib import Path

from app.auth import accounts
from app.auth.accounts import AccountError
from app.auth.passwords import PasswordHasher
from app.auth.policy import Role
from app.config import ConfigurationError, Settings
from app.store import Account, ObjectStore, StoreError, make_private_folder


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="portico", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve every API over gRPC and REST/JSON")
    serve.add_argument("--http-host", help="REST/JSON listen address (PORTICO_HTTP_HOST)")
    serve.add_argument("--http-port", type=int, help="REST/JSON port (PORTICO_HTTP_PORT)")
    serve.add_argument("--grpc-host", help="gRPC listen address (PORTICO_GRPC_HOST)")
    serve.add_argument("--grpc-port", type=int, help="gRPC port (PORTICO_GRPC_PORT)")
    serve.add_argument("--data-dir", type=Path, help="state folder (PORTICO_DATA_DIR)")
    serve.add_argument("--workers", type=int, help="server processes (PORTICO_WORKERS)")
    serve.add_argument("--tls-cert", help="PEM certificate chain for both ports (PORTICO_TLS_CERT)")
    serve.add_argument("--tls-key", help="PEM private key of --tls-cert (PORTICO_TLS_KEY)")
    serve.add_argument(
        "--tls-client-ca",
        help="require gRPC clients to present a certificate signed by this PEM CA "
        "(PORTICO_TLS_CLIENT_CA)",
    )
    serve.add_argument(
        "--demo", action="store_const", const=True, help="fill every service with a small world"
    )
    serve.set_defaults(run=_serve)

    users = commands.add_parser("users", help="manage accounts (in the configured database)")
    users.add_argument("--data-dir", type=Path, help="state folder (PORTICO_DATA_DIR)")
    actions = users.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="create an account")
    add.add_argument("name")
    add.add_argument("--role", required=True, choices=[r.value for r in Role])
    add.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    tenant = add.add_mutually_exclusive_group()
    tenant.add_argument(
        "--developer", default="", help="act only for this edge developer organisation"
    )
    tenant.add_argument(
        "--operator", default="", help="act only for this edge operator organisation"
    )
    actions.add_parser("list", help="list accounts")
    for action, text in (("disable", "refuse the account's logins and tokens"), ("enable", "")):
        actions.add_parser(action, help=text or "allow a disabled account again").add_argument(
            "name"
        )
    password = actions.add_parser("set-password", help="replace an account's password")
    password.add_argument("name")
    password.add_argument("--password-stdin", action="store_true")
    users.set_defaults(run=_users)

    from app.node_agent import add_node_agent_command

    add_node_agent_command(commands)

    commands.add_parser(
        "gen", help="regenerate gen/, the README's RPC table and openapi.yaml from protos/"
    ).set_defaults(run=_gen)
    openapi = commands.add_parser("openapi", help="write the OpenAPI 3.1 document (YAML)")
    openapi.add_argument(
        "path", nargs="?", default=None, help="output file, '-' for stdout (default openapi.yaml)"
    )
    openapi.set_defaults(run=_openapi)
    return parser


# codegen needs the development extra (grpcio-tools): imported only when asked for.
def _gen(args: argparse.Namespace) -> None:
    from app import codegen

    codegen.main()


def _openapi(args: argparse.Namespace) -> None:
    from app import codegen

    codegen.write_openapi(codegen.OPENAPI if args.path is None else Path(args.path))


def settings_from(args: argparse.Namespace, base: Settings) -> Settings:
    """``base`` with every flag that was given on the command line applied."""
    names = {f.name for f in dataclasses.fields(Settings)}
    given = {k: v for k, v in vars(args).items() if k in names and v is not None}
    return dataclasses.replace(base, **given)


def _settings(args: argparse.Namespace) -> Settings:
    try:
        return settings_from(args, Settings.from_env())
    except ConfigurationError as exc:
        raise SystemExit(f"portico: {exc}") from None


def _serve(args: argparse.Namespace) -> None:
    from app.main import serve

    serve(_settings(args))


def _read_password(from_stdin: bool) -> str:
    if from_stdin or not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\n")
    first = getpass.getpass("Password: ")
    if getpass.getpass("Again: ") != first:
        raise SystemExit("portico: the passwords differ")
    return first


def _users(args: argparse.Namespace) -> None:
    settings = _settings(args)
    password = ""
    if args.action in {"add", "set-password"}:
        password = _read_password(args.password_stdin)
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
                developer=args.developer,
                operator=args.operator,
            )
            print(f"added {account.username} ({account.role}{_binding(account)})")
        elif args.action == "list":
            for account in await store.list_accounts():
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


def main(argv: Sequence[str] | None = None) -> None:
    """Run one ``portico`` command."""
    args = _parser().parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
