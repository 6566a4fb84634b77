"""``portico login`` and ``portico call``: a grpcurl-like client for people without grpcurl.

``login`` calls ``AuthService.Login`` (or, given ``--token``, takes a token an identity provider
issued, once the server's ``CheckToken`` accepts it) and keeps the token, with the server's
addresses, in a private file; ``call`` then sends any RPC as JSON over gRPC (the default) or
REST with that token, printing each reply as it arrives. The methods are this package's own
descriptors, so nothing is looked up on the server first.
"""

from __future__ import annotations

import argparse
import difflib
import getpass
import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from app.cli.client_calls import (
    CallFailed,
    JsonObject,
    Metadata,
    RequestInvalid,
    call_grpc,
    call_rest,
)
from app.gateway.registry import Method, Registry

LOGIN = "services.auth.AuthService/Login"
CHECK_TOKEN = "services.auth.AuthService/CheckToken"
UNAUTHENTICATED = 16  # google.rpc.Code


def defaults(environ: Mapping[str, str]) -> dict[str, str]:
    """The server's addresses when neither a flag nor the login names them: this machine, on
    the ports ``portico serve`` takes from ``PORTICO_GRPC_PORT`` and ``PORTICO_HTTP_PORT``
    where this shell sets them (the quick start's server on other ports is found too); with
    ``PORTICO_SERVER=pyvoy`` and no gRPC port, gRPC is on the HTTP port, as that server serves
    it."""
    http_port = _port(environ.get("PORTICO_HTTP_PORT"), 8080)
    one_port = environ.get("PORTICO_SERVER") == "pyvoy" and "PORTICO_GRPC_PORT" not in environ
    grpc_port = http_port if one_port else _port(environ.get("PORTICO_GRPC_PORT"), 50051)
    return {
        "transport": "grpc",
        "grpc": f"127.0.0.1:{grpc_port}",
        "rest": f"http://127.0.0.1:{http_port}",
    }


def _port(text: str | None, default: int) -> int:
    # 0 (a free port, picked by the server) and what serve would refuse name no port to use.
    port = int(text) if text is not None and text.strip().isdigit() else 0
    return port if 0 < port < 65536 else default


def login_file() -> Path:
    """Where ``portico login`` keeps the token: ``$PORTICO_LOGIN_FILE``, else
    ``$XDG_CONFIG_HOME/portico/login.json`` (``~/.config`` without it)."""
    given = os.environ.get("PORTICO_LOGIN_FILE")
    if given:
        return Path(given)
    config = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(config) / "portico" / "login.json"


def add_client_commands(commands: Any) -> None:
    """Add ``login`` and ``call`` to the ``portico`` sub-commands."""
    login = commands.add_parser(
        "login",
        help="log in to a running server and keep the token",
        description="Log in to a running server (AuthService.Login) and keep the token, with "
        "the server's addresses, for `portico call`. With --token, keep a token of the "
        "identity provider the server trusts (PORTICO_OIDC_ISSUER) instead, once the server "
        "says it accepts it.",
    )
    who = login.add_mutually_exclusive_group(required=True)
    who.add_argument("--username", "-u")
    who.add_argument(
        "--token",
        metavar="TOKEN",
        help="a token the identity provider issued; '-' reads it from stdin (out of the "
        "shell's history and of `ps`)",
    )
    login.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    _server_options(login)
    login.set_defaults(run=_login)

    call = commands.add_parser(
        "call",
        help="call one RPC with a JSON request, over gRPC or REST",
        description="Call one RPC with a JSON request; print each reply as JSON as it arrives.",
    )
    call.add_argument("method", help="package.Service/Method (or package.Service.Method)")
    call.add_argument(
        "data",
        nargs="?",
        default="{}",
        help="the request as JSON (default {}); for client and bidirectional streams, several "
        "objects one after another; '@' reads them from stdin as they come",
    )
    call.add_argument(
        "-H", "--header", action="append", default=[], help="'name: value' metadata / header"
    )
    call.add_argument("--token", help="bearer token (default: $PORTICO_TOKEN, else the login's)")
    call.add_argument("--compact", action="store_true", help="one line per reply")
    _server_options(call)
    call.set_defaults(run=_call)


def _server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--transport", choices=("grpc", "rest"), help="default: the login's, else grpc"
    )
    parser.add_argument(
        "--grpc",
        help="gRPC address host:port (default: the login's, else 127.0.0.1 on "
        "$PORTICO_GRPC_PORT, else on the HTTP port with PORTICO_SERVER=pyvoy, else "
        "127.0.0.1:50051)",
    )
    parser.add_argument(
        "--rest",
        help="REST base URL (default: the login's, else http://127.0.0.1 on $PORTICO_HTTP_PORT, "
        "else http://127.0.0.1:8080)",
    )
    parser.add_argument(
        "--cacert", help="PEM CA of the server's TLS certificate: gRPC uses TLS, https trusts it"
    )


def _login(args: argparse.Namespace) -> None:
    saved = _saved()
    server = _server(args, saved)
    if args.token is not None:
        token = _pasted_token(server, args.token)
        who = "the identity provider's token"
    else:
        password = _password(args.password_stdin)
        request = {"username": args.username, "password": password}
        [reply] = list(_invoke(server, LOGIN, [request], []))
        token, who = reply["token"], args.username
    path = login_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # also when an older file was readable by others
    with os.fdopen(descriptor, "w") as out:
        json.dump({**server, "token": token}, out)
    print(f"logged in as {who}; token kept in {path}")


def _pasted_token(server: dict[str, str], given: str) -> str:
    """The token given (stdin for '-'), once the server accepts it: a token that is expired,
    of another issuer or audience, or pasted wrong is refused now, not at the next call."""
    token = (sys.stdin.readline() if given == "-" else given).strip()
    token = token.removeprefix("Bearer ").strip()
    if not token:
        raise SystemExit("portico: --token: no token given")
    [reply] = list(_invoke(server, CHECK_TOKEN, [{"token": token}], []))
    if not reply.get("success"):
        raise SystemExit(
            "portico: the server does not accept this token (expired, of another issuer or "
            "audience than its PORTICO_OIDC_* settings name, or not signed by the provider's keys)"
        )
    return token


def _call(args: argparse.Namespace) -> None:
    saved = _saved()
    server = _server(args, saved)
    token = args.token or os.environ.get("PORTICO_TOKEN") or saved.get("token", "")
    metadata = [_header(h) for h in args.header]
    if token and not any(k == "authorization" for k, _ in metadata):
        metadata.append(("authorization", f"Bearer {token}"))
    method = _method(args.method)
    requests = _requests(sys.stdin if args.data == "@" else [args.data])
    if not method.client_streaming:
        requests = iter([_one(requests, method)])
    try:
        for reply in _invoke(server, method, requests, metadata):
            print(json.dumps(reply, indent=None if args.compact else 2), flush=True)
    except KeyboardInterrupt:  # how a follow stream ends: no traceback
        raise SystemExit(130) from None
    except BrokenPipeError:  # `portico call ... | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _invoke(
    server: dict[str, str], method: Method | str, requests: Iterable[JsonObject], metadata: Metadata
) -> Iterator[JsonObject]:
    """The replies, or the command ends: the Status on stderr and exit status 1."""
    found = _method(method) if isinstance(method, str) else method
    cacert = server.get("cacert") or None
    try:
        if server["transport"] == "rest":
            yield from call_rest(server["rest"], found, requests, metadata, cacert)
        else:
            roots = Path(cacert).read_bytes() if cacert else None
            yield from call_grpc(server["grpc"], found, requests, metadata, roots)
    except CallFailed as exc:
        print(json.dumps(exc.status, indent=2), file=sys.stderr)
        if exc.status.get("code") == UNAUTHENTICATED and not _sends_token(metadata):
            raise SystemExit(
                "portico: this call needs a token: run `portico login -u USERNAME` first, "
                "or give one with --token or PORTICO_TOKEN"
            ) from None
        raise SystemExit(1) from None
    except RequestInvalid as exc:
        raise SystemExit(f"portico: {exc}") from None
    except OSError as exc:
        raise SystemExit(f"portico: cannot reach the server ({exc})") from None


def _sends_token(metadata: Metadata) -> bool:
    return any(key == "authorization" for key, _ in metadata)


def _saved() -> dict[str, str]:
    path = login_file()
    try:
        saved = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise SystemExit(f"portico: cannot read {path} ({exc}); log in again") from None
    return {k: v for k, v in saved.items() if isinstance(v, str)}


def _server(args: argparse.Namespace, saved: dict[str, str]) -> dict[str, str]:
    """The transport and addresses: flags, else the login's, else the defaults."""
    server = {
        key: getattr(args, key) or saved.get(key) or default
        for key, default in defaults(os.environ).items()
    }
    server["cacert"] = args.cacert or saved.get("cacert", "")
    if server["cacert"]:
        server["cacert"] = str(Path(server["cacert"]).resolve())
    return server


def _method(name: str) -> Method:
    service, slash, method = name.strip("/").rpartition("/")
    if not slash:
        service, _, method = name.rpartition(".")
    if not service or not method:
        raise SystemExit(f"portico: give the method as package.Service/Method, not {name!r}")
    methods = list(Registry.from_package("gen"))
    for candidate in methods:
        if candidate.service == service and candidate.name == method:
            return candidate
    siblings = [m.name for m in methods if m.service == service]
    if siblings:
        said = f"portico: {service} has no method {method!r}"
        close = difflib.get_close_matches(method, siblings, n=3, cutoff=0.6)
        return _suggest(said, [f"{service}/{name}" for name in close])
    said = f"portico: no service {service!r}"
    services = sorted({m.service for m in methods})
    close = difflib.get_close_matches(service, services, n=3, cutoff=0.6)
    named = {m.service for m in methods if m.name == method}
    return _suggest(said, [f"{s}/{method}" if s in named else s for s in close])


def _suggest(said: str, close: list[str]) -> Any:
    if close:
        said += "; did you mean " + " or ".join(close) + "?"
    raise SystemExit(said)


def _requests(chunks: Iterable[str]) -> Iterator[JsonObject]:
    """JSON objects one after another (whitespace between them is free), decoded as soon as
    each is complete: a stream of requests from stdin goes out as it is typed."""
    decoder = json.JSONDecoder()
    pending = ""
    for chunk in chunks:
        pending += chunk
        while pending.strip():
            try:
                value, end = decoder.raw_decode(pending.lstrip())
            except ValueError:
                break  # incomplete so far: wait for more
            if not isinstance(value, dict):
                raise SystemExit(f"portico: a request must be a JSON object, not {value!r}")
            yield value
            pending = pending.lstrip()[end:]
    if pending.strip():
        raise SystemExit(f"portico: the request is not valid JSON: {pending.strip()[:80]!r}")


def _one(requests: Iterator[JsonObject], method: Method) -> JsonObject:
    found = list(requests)
    if len(found) != 1:
        raise SystemExit(f"portico: {method.full_name} takes one request, not {len(found)}")
    return found[0]


def _header(text: str) -> tuple[str, str]:
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise SystemExit(f"portico: a header is 'name: value', not {text!r}")
    return name.strip().lower(), value.strip()


def _password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\n")
    if not sys.stdin.isatty():
        raise SystemExit("portico: no terminal to ask for the password on; use --password-stdin")
    return getpass.getpass("Password: ")
