"""Where the client commands find the server and the token.

The addresses are the flags, else those of the saved login, else this shell's ``PORTICO_*``
settings as ``portico serve`` reads them, else the defaults. ``portico login`` keeps the token
with the addresses it used in a private file; a later ``login`` starts afresh from the flags and
the shell (``--again`` goes back to the saved login's server), so a login to one server is never
sent to another one met later on the same port.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ADDRESSES = ("transport", "grpc", "rest")


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


def read_saved() -> dict[str, str]:
    """The saved login (its token, username and addresses), or nothing."""
    path = login_file()
    try:
        saved = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise SystemExit(f"portico: cannot read {path} ({exc}); log in again") from None
    if not isinstance(saved, dict):
        raise SystemExit(f"portico: {path} is not a saved login; log in again")
    return {k: v for k, v in saved.items() if isinstance(v, str)}


def save(server: Server, username: str, token: str) -> Path:
    """Keep the login, readable by this user only; where it was kept."""
    path = login_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # also when an older file was readable by others
    kept = {**server.addresses, "cacert": server.cacert, "username": username, "token": token}
    with os.fdopen(descriptor, "w") as out:
        json.dump(kept, out)
    return path


@dataclass(frozen=True)
class Server:
    """Where a command calls: the transport, both addresses, the CA to trust; and which of
    them came from the saved login (for an error to say so)."""

    addresses: dict[str, str]
    cacert: str = ""
    from_login: frozenset[str] = field(default_factory=frozenset)

    @property
    def transport(self) -> str:
        return self.addresses["transport"]

    @property
    def grpc(self) -> str:
        return self.addresses["grpc"]

    @property
    def rest(self) -> str:
        return self.addresses["rest"]


def server_for(args: argparse.Namespace, saved: Mapping[str, str]) -> Server:
    """The flags, else ``saved``'s addresses, else the defaults."""
    addresses, from_login = {}, set()
    for key, default in defaults(os.environ).items():
        given = getattr(args, key, None)
        if not given and saved.get(key):
            from_login.add(key)
        addresses[key] = given or saved.get(key) or default
    cacert = args.cacert or saved.get("cacert", "")
    return Server(addresses, str(Path(cacert).resolve()) if cacert else "", frozenset(from_login))


def expired_at(token: str, now: float | None = None) -> float | None:
    """When ``token`` expired (its ``exp`` claim, read without verifying it), or None while
    it is current or cannot be read: only to say so before a call that would be refused."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        expires = float(claims["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None
    return expires if expires <= (time.time() if now is None else now) else None
