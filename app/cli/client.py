"""``portico login``, ``token``, ``call``, ``list`` and ``describe``: a grpcurl-like client for
people without grpcurl.

``login`` calls ``AuthService.Login`` (or, given ``--token``, takes a token an identity provider
issued, once the server's ``CheckToken`` accepts it) and keeps the token, with the server's
addresses, in a private file (:mod:`app.cli.saved_login`); ``call`` then sends any RPC as JSON
over gRPC (the default) or REST with that token, printing each reply as it arrives; ``token``
prints a token for scripts. Portico's own methods are this package's descriptors, so nothing is
looked up on the server first; any other (a server behind ``portico proxy``) is asked of the
server's reflection, as ``list`` and ``describe`` are (:mod:`app.cli.reflect`).
"""

from __future__ import annotations

import argparse
import functools
import getpass
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from app.calls.close_names import close_names, did_you_mean
from app.cli import reflect
from app.cli.client_calls import (
    CallFailed,
    JsonObject,
    Metadata,
    NotGrpc,
    RequestInvalid,
    call_grpc,
    call_rest,
)
from app.cli.saved_login import Server, expired_at, read_saved, save, server_for
from app.gateway.registry import Method, Registry

LOGIN = "services.auth.AuthService/Login"
CHECK_TOKEN = "services.auth.AuthService/CheckToken"
UNAUTHENTICATED = 16  # google.rpc.Code
DEADLINE_EXCEEDED = 4


def add_client_commands(commands: Any) -> None:
    """Add ``login``, ``token``, ``call``, ``list`` and ``describe`` to the sub-commands."""
    login = commands.add_parser(
        "login",
        help="log in to a running server and keep the token",
        description="Log in to a running server (AuthService.Login) and keep the token, with "
        "the server's addresses, for `portico call`. The addresses are the flags, else this "
        "shell's PORTICO_* ports, else the defaults: never those of an earlier login, unless "
        "--again. With --token, keep a token of the identity provider the server trusts "
        "(PORTICO_OIDC_ISSUER) instead, once the server says it accepts it.",
    )
    who = login.add_mutually_exclusive_group()
    who.add_argument("--username", "-u", help="the account (with --again: the saved login's)")
    who.add_argument(
        "--token",
        metavar="TOKEN",
        help="a token the identity provider issued; '-' reads it from stdin (out of the "
        "shell's history and of `ps`)",
    )
    login.add_argument(
        "--again",
        action="store_true",
        help="log in again to the saved login's server, by default as the same user",
    )
    login.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    _server_options(login)
    login.set_defaults(run=_login)

    token = commands.add_parser(
        "token",
        help="print a token for scripts: TOKEN=$(portico token -u admin --password-stdin)",
        description="With -u, log in and print the token (nothing is kept); without, print the "
        "saved login's token. Fails with one line on stderr, printing nothing, when there is none.",
    )
    token.add_argument("--username", "-u", help="log in as this account (default: the saved login)")
    token.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    _server_options(token)
    token.set_defaults(run=_token)

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
    call.add_argument(
        "--timeout",
        type=_seconds,
        help="seconds the whole call may take, a stream's too (default: 30 for a unary reply, "
        "none for a stream)",
    )
    _server_options(call)
    call.set_defaults(run=_call)

    listing = commands.add_parser(
        "list",
        help="list the services the server serves, or a service's methods (server reflection)",
        description="List the services the gRPC server serves, or the methods of SERVICE, as "
        "its server reflection says (like `grpcurl list`).",
    )
    listing.add_argument("service", nargs="?", help="package.Service whose methods to list")
    _server_options(listing, grpc_only=True)
    listing.set_defaults(run=_list)

    describe = commands.add_parser(
        "describe",
        help="show a service, method, message, enum or field in .proto syntax (reflection)",
        description="Show what SYMBOL (package.Service, package.Service.Method, package.Message, "
        "...) is, in .proto syntax, as the server's reflection says (like `grpcurl describe`); "
        "without SYMBOL, every service.",
    )
    describe.add_argument("symbol", nargs="?", help="a full name")
    _server_options(describe, grpc_only=True)
    describe.set_defaults(run=_describe)


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 86_400:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to 86400")
    return seconds


def _server_options(parser: argparse.ArgumentParser, grpc_only: bool = False) -> None:
    if not grpc_only:
        parser.add_argument(
            "--transport", choices=("grpc", "rest"), help="default: the login's, else grpc"
        )
    parser.add_argument(
        "--grpc",
        help="gRPC address host:port (default: the login's, else 127.0.0.1 on "
        "$PORTICO_GRPC_PORT, else on the HTTP port with PORTICO_SERVER=pyvoy, else "
        "127.0.0.1:50051)",
    )
    if not grpc_only:
        parser.add_argument(
            "--rest",
            help="REST base URL (default: the login's, else http://127.0.0.1 on "
            "$PORTICO_HTTP_PORT, else http://127.0.0.1:8080)",
        )
    parser.add_argument(
        "--cacert", help="PEM CA of the server's TLS certificate: gRPC uses TLS, https trusts it"
    )


def _login(args: argparse.Namespace) -> None:
    saved = read_saved()
    if args.again and not saved.get("token"):
        raise SystemExit(
            "portico: there is no saved login to log in again to; log in with "
            "`portico login -u USERNAME`"
        )
    if args.token is not None:
        server = server_for(args, saved if args.again else {})
        path = save(server, "", _pasted_token(server, args.token))
        print(f"logged in with the identity provider's token; token kept in {path}")
        return
    username = args.username or (saved.get("username", "") if args.again else "")
    if not username:
        raise SystemExit(
            "portico: give the account to log in as: `portico login -u USERNAME`"
            + (" (the saved login does not name one)" if args.again else "")
        )
    server = server_for(args, saved if args.again else {})
    token = _log_in(server, username, _password(args.password_stdin))
    path = save(server, username, token)
    print(f"logged in as {username}; token kept in {path}")


def _pasted_token(server: Server, given: str) -> str:
    """The token given (stdin for '-'), once the server accepts it: a token that is expired,
    of another issuer or audience, or pasted wrong is refused now, not at the next call."""
    token = (sys.stdin.readline() if given == "-" else given).strip()
    token = token.removeprefix("Bearer ").strip()
    if not token:
        raise SystemExit("portico: --token: no token given")
    try:
        [reply] = list(_replies(server, _method(CHECK_TOKEN, server), [{"token": token}]))
    except CallFailed as exc:
        said = exc.status.get("message", "")
        raise SystemExit(f"portico: the token was not checked: {said}") from None
    if not reply.get("success"):
        raise SystemExit(
            "portico: the server does not accept this token (expired, of another issuer or "
            "audience than its PORTICO_OIDC_* settings name, or not signed by the provider's keys)"
        )
    return token


def _token(args: argparse.Namespace) -> None:
    if args.username:
        server = server_for(args, {})
        print(_log_in(server, args.username, _password(args.password_stdin)))
        return
    saved = read_saved()
    token = saved.get("token", "")
    if not token:
        raise SystemExit(
            "portico: there is no saved login: log in with `portico login -u USERNAME`, or get "
            "a token with `portico token -u USERNAME`"
        )
    expired = expired_at(token)
    if expired is not None:
        raise SystemExit(f"portico: the saved login's token {_expiry(expired)}; {_again(saved)}")
    print(token)


def _expiry(expired: float) -> str:
    return "expired at " + time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expired))


def _again(saved: dict[str, str]) -> str:
    return "log in again with `portico login --again`" + (
        f" (as {saved['username']}, to {_where(saved)})" if saved.get("username") else ""
    )


def _where(saved: dict[str, str]) -> str:
    return saved.get("rest", "") if saved.get("transport") == "rest" else saved.get("grpc", "")


def _log_in(server: Server, username: str, password: str) -> str:
    """A token of ``username``; the command ends with the server's one sentence if refused."""
    try:
        [reply] = list(_replies(server, _method(LOGIN, server), [_credentials(username, password)]))
    except CallFailed as exc:
        raise SystemExit(f"portico: login refused: {exc.status.get('message', '')}") from None
    token: str = reply["token"]
    return token


def _credentials(username: str, password: str) -> JsonObject:
    return {"username": username, "password": password}


def _call(args: argparse.Namespace) -> None:
    saved = read_saved()
    server = server_for(args, saved)
    token, source = _token_to_send(args, saved)
    metadata = [_header(h) for h in args.header]
    if token and not any(k == "authorization" for k, _ in metadata):
        metadata.append(("authorization", f"Bearer {token}"))
    elif any(k == "authorization" for k, _ in metadata):
        source = "the authorization header given"
    method = _method(args.method, server)
    requests = _requests(sys.stdin if args.data == "@" else [args.data])
    if not method.client_streaming:
        requests = iter([_one(requests, method)])
    try:
        for reply in _replies(server, method, requests, metadata, args.timeout):
            print(json.dumps(reply, indent=None if args.compact else 2), flush=True)
    except CallFailed as exc:
        raise SystemExit(_refused(exc.status, source, saved, args.timeout) or 1) from None
    except KeyboardInterrupt:  # how a follow stream ends: no traceback
        raise SystemExit(130) from None
    except BrokenPipeError:  # `portico call ... | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _token_to_send(args: argparse.Namespace, saved: dict[str, str]) -> tuple[str, str]:
    """The bearer token and where it came from (for a refusal to say so)."""
    if args.token:
        return args.token, "--token"
    if os.environ.get("PORTICO_TOKEN"):
        return os.environ["PORTICO_TOKEN"], "PORTICO_TOKEN"
    return saved.get("token", ""), "login" if saved.get("token") else ""


def _refused(status: JsonObject, source: str, saved: dict[str, str], timeout: float | None) -> str:
    """What the command ends with when the server answered an error: the Status on stderr,
    then, where there is one, the sentence that says what to do."""
    print(json.dumps(status, indent=2), file=sys.stderr)
    code = status.get("code")
    message = str(status.get("message", "")).removesuffix("; log in again")  # said below
    if code == DEADLINE_EXCEEDED and timeout is not None:
        return f"portico: no complete answer within {timeout:g} s (--timeout)"
    if code != UNAUTHENTICATED:
        return ""
    if not source:
        return (
            "portico: this call needs a token: run `portico login -u USERNAME` first, "
            "or give one with --token or PORTICO_TOKEN"
        )
    if source == "login":
        return f"portico: the saved login's token was refused ({message}); {_again(saved)}"
    return (
        f"portico: the token of {source} was refused ({message}); get a new one with "
        "`portico token -u USERNAME`"
    )


def _replies(
    server: Server,
    method: Method,
    requests: Iterable[JsonObject],
    metadata: Metadata | None = None,
    timeout: float | None = None,
) -> Iterator[JsonObject]:
    """The replies; CallFailed when the server answers an error, else the command ends with
    one line saying why no call was made."""
    cacert = server.cacert or None
    metadata = metadata or []
    try:
        if server.transport == "rest":
            yield from call_rest(server.rest, method, requests, metadata, cacert, timeout)
        else:
            roots = Path(cacert).read_bytes() if cacert else None
            yield from call_grpc(server.grpc, method, requests, metadata, roots, timeout)
    except RequestInvalid as exc:
        raise SystemExit(f"portico: {exc}") from None
    except OSError as exc:
        raise SystemExit(_unreachable(exc, server)) from None


def _unreachable(exc: OSError, server: Server) -> str:
    if isinstance(exc, NotGrpc):
        whence = " (the saved login's gRPC address)" if "grpc" in server.from_login else ""
        return (
            f"portico: {exc.target}{whence} speaks HTTP/1.1 only, not gRPC: it is a REST port; "
            "give the gRPC port with --grpc HOST:PORT (`portico serve` under uvicorn serves "
            "gRPC on 50051 unless told otherwise), or call over REST with --transport rest"
        )
    return f"portico: cannot reach the server ({exc})"


def _method(name: str, server: Server | None = None) -> Method:
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
        close = close_names(method, siblings)
        raise SystemExit(said + did_you_mean([f"{service}/{name}" for name in close]))
    services = sorted({m.service for m in methods})
    close = close_names(service, services)
    if not close and server is not None and server.transport == "grpc":
        # Not one of Portico's own, nor a slip of one: a server behind `portico proxy`, say,
        # tells what it serves.
        reflection = _reflected(server)
        try:
            found: Method = reflect.asking(reflection, lambda: reflection.method(service, method))
        except reflect.NotFound as exc:
            raise SystemExit(f"portico: {exc}") from None
        return found
    said = f"portico: no service {service!r}"
    named = {m.service for m in methods if m.name == method}
    raise SystemExit(said + did_you_mean([f"{s}/{method}" if s in named else s for s in close]))


def _reflected(server: Server) -> reflect.Reflected:
    roots = Path(server.cacert).read_bytes() if server.cacert else None
    try:
        return reflect.reflected(server.grpc, roots)
    except CallFailed as exc:
        raise SystemExit(f"portico: server reflection failed: {exc}") from None
    except OSError as exc:
        raise SystemExit(_unreachable(exc, server)) from None


def _list(args: argparse.Namespace) -> None:
    server = server_for(args, read_saved())
    reflection = _reflected(server)
    try:
        names = reflect.asking(reflection, lambda: reflect.listed(reflection, args.service))
    except reflect.NotFound as exc:
        raise SystemExit(f"portico: {exc}") from None
    print("\n".join(names))


def _describe(args: argparse.Namespace) -> None:
    server = server_for(args, read_saved())
    reflection = _reflected(server)
    symbols = [args.symbol] if args.symbol else reflection.services
    try:
        texts = [
            reflect.asking(reflection, functools.partial(reflect.described, reflection, symbol))
            for symbol in symbols
        ]
    except reflect.NotFound as exc:
        raise SystemExit(f"portico: {exc}") from None
    print("\n\n".join(texts))


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
