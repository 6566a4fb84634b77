"""The ``portico`` command line (also ``python -m app``).

Every ``serve`` flag has a ``PORTICO_*`` environment variable (see ``app/settings/config.py``); a
flag given on the command line wins over the environment.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app import __version__
from app.calls.callers import Role
from app.cli.flags import naming_flags, remember_flags, settings_or_exit
from app.settings.config import SERVERS, ConfigurationError, Settings

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
        choices=SERVERS,
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
    remember_flags(serve)

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
        print_policy(settings_or_exit(args))
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
        choices=SERVERS,
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
    remember_flags(proxy)


def _proxy(args: argparse.Namespace) -> None:
    from app.proxy.run import proxy

    if args.upstreams is not None:
        args.upstreams = tuple(args.upstreams)
    settings = settings_or_exit(args)
    naming_flags(args, lambda: proxy(settings))


# codegen needs the development extra (grpcio-tools): imported only when asked for.
def _gen(args: argparse.Namespace) -> None:
    from app.cli import codegen

    codegen.main()


def _openapi(args: argparse.Namespace) -> None:
    from app.cli import codegen

    codegen.write_openapi(codegen.OPENAPI if args.path is None else Path(args.path))


def _serve(args: argparse.Namespace) -> None:
    from app.main import PORTICO
    from app.server.serving import serve

    settings = settings_or_exit(args)
    naming_flags(args, lambda: serve(settings, PORTICO))


def _backup(args: argparse.Namespace) -> None:
    from app.cli import backup

    backup.run(settings_or_exit(args), args.file)


def _organisation(name: str) -> str:
    # An empty name would bind nothing, i.e. give the global view: in a script, an unset
    # variable ("--developer $DEV") must not silently do that.
    if not name:
        raise argparse.ArgumentTypeError(
            "must name an organisation (leave the option out for none)"
        )
    return name


def _users(args: argparse.Namespace) -> None:
    # The store and the accounts' code, imported for this command alone: the client commands
    # (login, call, token, ready) start without them.
    from app.cli.users import users

    users(args)


def main(argv: Sequence[str] | None = None) -> None:
    """Run one ``portico`` command."""
    args = _parser().parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
