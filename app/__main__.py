"""The ``portico`` command line (also ``python -m app``).

Every ``serve`` flag has a ``PORTICO_*`` environment variable (see ``app/config.py``); a flag
given on the command line wins over the environment.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from pathlib import Path

from app.config import Settings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="portico", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve every API over gRPC and REST/JSON")
    serve.add_argument("--http-host", help="REST/JSON listen address (PORTICO_HTTP_HOST)")
    serve.add_argument("--http-port", type=int, help="REST/JSON port (PORTICO_HTTP_PORT)")
    serve.add_argument("--grpc-host", help="gRPC listen address (PORTICO_GRPC_HOST)")
    serve.add_argument("--grpc-port", type=int, help="gRPC port (PORTICO_GRPC_PORT)")
    serve.add_argument("--data-dir", type=Path, help="state folder (PORTICO_DATA_DIR)")
    serve.add_argument(
        "--demo", action="store_const", const=True, help="fill every service with a small world"
    )

    commands.add_parser("gen", help="regenerate gen/ and the README's RPC table from protos/")
    openapi = commands.add_parser("openapi", help="write the OpenAPI 3.1 document (YAML)")
    openapi.add_argument(
        "path", nargs="?", default=None, help="output file, '-' for stdout (default openapi.yaml)"
    )
    return parser


def settings_from(args: argparse.Namespace, base: Settings) -> Settings:
    """``base`` with every flag that was given on the command line applied."""
    names = {f.name for f in dataclasses.fields(Settings)}
    given = {k: v for k, v in vars(args).items() if k in names and v is not None}
    return dataclasses.replace(base, **given)


def main(argv: Sequence[str] | None = None) -> None:
    """Run one ``portico`` command."""
    args = _parser().parse_args(argv)
    if args.command == "gen":
        from app import codegen

        codegen.main()
    elif args.command == "openapi":
        from app import codegen

        codegen.write_openapi(codegen.OPENAPI if args.path is None else Path(args.path))
    elif args.command == "serve":
        from app.main import serve

        serve(settings_from(args, Settings.from_env()))


if __name__ == "__main__":
    main()
