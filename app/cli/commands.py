"""The ``portico`` command line (also ``python -m app``).

Every ``serve`` flag has a ``PORTICO_*`` environment variable (see ``app/settings/config.py``); a
flag given on the command line wins over the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import getpass
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app import __version__
from app.auth import accounts
from app.auth.accounts import AccountError
from app.auth.passwords import PasswordHasher
from app.calls.callers import Role
from app.observe.logs import audit_to_file, configure_logging
from app.settings.config import ConfigurationError, Settings, grpc_port_given
from app.store import Account, ObjectStore, StoreError, make_private_folder

AUDIT_LOG = "audit.log"  # in the data folder: what `portico users` changed, and who
DESCRIPTION = "Portico: five control-plane gRPC APIs, served over gRPC and REST/JSON."
SERVE_EPILOG = (
    "Every setting also has a PORTICO_* environment variable (docs/reference/settings.md); a "
    "flag wins over it. Port 0 picks a free port; the start-up line names the ports bound."
)


def _setting(text: str, name: str) -> str:
    """Help for a flag backed by a setting: its variable and its built-in default."""
    default = getattr(Settings, name)
    if isinstance(default, bool):
        return f"{text} (${'PORTICO_' + name.upper()})"
    if isinstance(default, Path) and not default.is_absolute():
        default = f"./{default}"  # as a user would type it: Path drops the "./"
    if default == "":
        default = "none"
    return f"{text} (${'PORTICO_' + name.upper()}, default: {default})"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="portico", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"portico {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve",
        help="serve every API over gRPC and REST/JSON",
        description="Serve every API over gRPC and REST/JSON until SIGINT or SIGTERM.",
        epilog=SERVE_EPILOG,
    )
    serve.add_argument("--http-host", help=_setting("REST/JSON listen address", "http_host"))
    serve.add_argument("--http-port", type=int, help=_setting("REST/JSON port", "http_port"))
    serve.add_argument("--grpc-host", help=_setting("gRPC listen address", "grpc_host"))
    serve.add_argument("--grpc-port", type=int, help=_setting("gRPC port", "grpc_port"))
    serve.add_argument("--data-dir", type=Path, help=_setting("state folder", "data_dir"))
    serve.add_argument("--workers", type=int, help=_setting("server processes", "workers"))
    serve.add_argument(
        "--server",
        choices=("uvicorn", "pyvoy"),
        help=_setting("HTTP server; pyvoy also serves native gRPC on the HTTP port", "server"),
    )
    serve.add_argument(
        "--tls-cert", help=_setting("PEM certificate chain for both ports", "tls_cert")
    )
    serve.add_argument("--tls-key", help=_setting("PEM private key of --tls-cert", "tls_key"))
    serve.add_argument(
        "--tls-client-ca",
        help=_setting(
            "require gRPC clients to present a certificate signed by this PEM CA", "tls_client_ca"
        ),
    )
    serve.add_argument(
        "--demo",
        action="store_const",
        const=True,
        help=_setting("fill every service with a small world", "demo"),
    )
    serve.set_defaults(run=_serve)

    _add_proxy_command(commands)

    # --data-dir is taken before the action and after it (`portico users list --data-dir D`).
    data_dir = argparse.ArgumentParser(add_help=False)
    data_dir.add_argument(
        "--data-dir",
        type=Path,
        default=argparse.SUPPRESS,
        help=_setting("state folder; account changes are logged to its audit.log", "data_dir"),
    )
    users = commands.add_parser(
        "users", parents=[data_dir], help="manage accounts (in the configured database)"
    )
    actions = users.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", parents=[data_dir], help="create an account")
    add.add_argument("name")
    add.add_argument("--role", required=True, choices=[r.value for r in Role])
    add.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    tenant = add.add_mutually_exclusive_group()
    tenant.add_argument(
        "--developer",
        type=_organisation,
        help="act only for this edge developer organisation",
    )
    tenant.add_argument(
        "--operator",
        type=_organisation,
        help="act only for this edge operator organisation",
    )
    actions.add_parser("list", parents=[data_dir], help="list accounts")
    for action, text in (("disable", "refuse the account's logins and tokens"), ("enable", "")):
        actions.add_parser(
            action, parents=[data_dir], help=text or "allow a disabled account again"
        ).add_argument("name")
    password = actions.add_parser(
        "set-password",
        parents=[data_dir],
        help="replace an account's password and refuse the tokens issued before",
    )
    password.add_argument("name")
    password.add_argument("--password-stdin", action="store_true")
    users.set_defaults(run=_users)

    from app.cli.backup import add_backup_command

    add_backup_command(commands, data_dir).set_defaults(run=_backup)

    from app.cli.node_agent import add_node_agent_command

    add_node_agent_command(commands)

    from app.cli.client import add_client_commands
    from app.cli.ready import add_ready_command

    add_client_commands(commands)
    add_ready_command(commands)

    commands.add_parser(
        "gen", help="regenerate gen/, the docs' RPC and settings tables and openapi.yaml"
    ).set_defaults(run=_gen)
    openapi = commands.add_parser("openapi", help="write the OpenAPI 3.1 document (YAML)")
    openapi.add_argument(
        "path", nargs="?", default=None, help="output file, '-' for stdout (default openapi.yaml)"
    )
    openapi.set_defaults(run=_openapi)
    policy = commands.add_parser(
        "policy",
        help="print who may call each method: the name rule, or PORTICO_POLICY_FILE's roles",
    )
    policy.add_argument(
        "--policy-file", dest="policy_file", help=_setting("the policy file", "policy_file")
    )
    policy.add_argument(
        "--descriptor-set",
        dest="descriptor_set",
        help="the methods of this FileDescriptorSet (a `portico proxy` upstream's) instead of "
        "Portico's own",
    )
    policy.set_defaults(run=_policy)
    return parser


def _policy(args: argparse.Namespace) -> None:
    from app.cli.policy import print_policy

    try:
        print_policy(_settings(args))
    except ConfigurationError as exc:
        raise SystemExit(f"portico: {exc}") from None


def _add_proxy_command(commands: Any) -> None:
    proxy = commands.add_parser(
        "proxy",
        help="serve REST/JSON, streams and the dashboard in front of other gRPC servers",
        description=(
            "Serve every method of the upstream gRPC servers over REST/JSON (google.api.http "
            "routes and the canonical POST /package.Service/Method), NDJSON/SSE, WebSocket, "
            "Connect and gRPC-Web, with OpenAPI and the dashboard, until SIGINT or SIGTERM. "
            "Descriptors come from server reflection (or --descriptor-set); SIGHUP re-reads them."
        ),
        epilog=SERVE_EPILOG,
    )
    proxy.add_argument(
        "--upstream",
        dest="upstreams",
        action="append",
        metavar="HOST:PORT",
        help="a gRPC server to front; repeat for several ($PORTICO_UPSTREAMS, comma-separated)",
    )
    proxy.add_argument(
        "--descriptor-set",
        help=_setting("a FileDescriptorSet to read instead of server reflection", "descriptor_set"),
    )
    proxy.add_argument(
        "--auth",
        dest="proxy_auth",
        choices=["jwt", "none", "passthrough"],
        help=_setting(
            "jwt: Portico's accounts and login; none: no checks; passthrough: the caller's "
            "credentials go to the upstream",
            "proxy_auth",
        ),
    )
    proxy.add_argument("--workers", type=int, help=_setting("proxy processes", "workers"))
    proxy.add_argument(
        "--server",
        choices=("uvicorn", "pyvoy"),
        help=_setting(
            "HTTP server; pyvoy also serves native gRPC on the HTTP port, and calls the upstreams "
            "through Envoy",
            "server",
        ),
    )
    proxy.add_argument("--http-host", help=_setting("REST/JSON listen address", "http_host"))
    proxy.add_argument("--http-port", type=int, help=_setting("REST/JSON port", "http_port"))
    proxy.add_argument(
        "--data-dir", type=Path, help=_setting("state folder (accounts for --auth jwt)", "data_dir")
    )
    proxy.add_argument(
        "--upstream-tls",
        action="store_const",
        const=True,
        help=_setting("TLS to the upstreams, verified with the system roots", "upstream_tls"),
    )
    proxy.add_argument(
        "--upstream-ca",
        help=_setting("TLS to the upstreams, verified with this PEM CA", "upstream_ca"),
    )
    proxy.add_argument(
        "--upstream-cert",
        help=_setting("PEM client certificate for the upstreams", "upstream_cert"),
    )
    proxy.add_argument(
        "--upstream-key", help=_setting("PEM private key of --upstream-cert", "upstream_key")
    )
    proxy.add_argument(
        "--upstream-poll-seconds",
        type=float,
        help=_setting(
            "how often reflection is asked whether descriptors changed", "upstream_poll_seconds"
        ),
    )
    proxy.set_defaults(run=_proxy)


def _proxy(args: argparse.Namespace) -> None:
    from app.proxy.run import proxy

    if args.upstreams is not None:
        args.upstreams = tuple(args.upstreams)
    proxy(_settings(args))


# codegen needs the development extra (grpcio-tools): imported only when asked for.
def _gen(args: argparse.Namespace) -> None:
    from app.cli import codegen

    codegen.main()


def _openapi(args: argparse.Namespace) -> None:
    from app.cli import codegen

    codegen.write_openapi(codegen.OPENAPI if args.path is None else Path(args.path))


def settings_from(args: argparse.Namespace, base: Settings) -> Settings:
    """``base`` with every flag that was given on the command line applied."""
    names = {f.name for f in dataclasses.fields(Settings)}
    given = {k: v for k, v in vars(args).items() if k in names and v is not None}
    return dataclasses.replace(base, **grpc_port_given({"grpc_server": base.grpc_server, **given}))


def _settings(args: argparse.Namespace) -> Settings:
    try:
        return settings_from(args, Settings.from_env())
    except ConfigurationError as exc:
        raise SystemExit(f"portico: {exc}") from None


def _serve(args: argparse.Namespace) -> None:
    from app.server.serving import serve

    serve(_settings(args))


def _backup(args: argparse.Namespace) -> None:
    from app.cli import backup

    backup.run(_settings(args), args.file)


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


def _organisation(name: str) -> str:
    # An empty name would bind nothing, i.e. give the global view: in a script, an unset
    # variable ("--developer $DEV") must not silently do that.
    if not name:
        raise argparse.ArgumentTypeError(
            "must name an organisation (leave the option out for none)"
        )
    return name


def _users(args: argparse.Namespace) -> None:
    settings = _settings(args)
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


def main(argv: Sequence[str] | None = None) -> None:
    """Run one ``portico`` command."""
    args = _parser().parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
