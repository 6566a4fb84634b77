"""``portico ready``: wait until the server just started is ready, or say why it never will be.

``curl --retry ... /readyz`` cannot tell a server that failed to start (its reason is only in its
log) from another one already answering on the same port. Given the pid of the ``portico serve``
it waits for (``$!`` in a shell), this command tells them apart: that process must be alive and
must be the one answering (``/readyz`` names its server's pid); if it exits first, the reason is
the last ``portico:`` line of its log.

Where the server answers is asked of the server itself, not guessed from this shell: ``--url``
or ``--http-port`` when given, else its start-up line in ``--log`` (the port it bound, port 0
included), else its own command line and environment (``serve --http-port 8090``, however this
shell's variables differ), else this shell's ``PORTICO_HTTP_*`` settings.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.cli.healthcheck import loopback_tls, probe_url

POLL_SECONDS = 0.2
# The start-up line of `portico serve` (either server) and of `portico proxy`: the URL it serves.
START_LINE = re.compile(r"REST/JSON(?:, gRPC, Connect and gRPC-Web)? on (https?://[^\s,()]+)")
MAX_LOG_BYTES = 1 << 20  # the start-up line is near the top; a log read is bounded
FREE_PORT: dict[str, str] = {"PORTICO_HTTP_PORT": "0"}  # what a server on port 0 says of its port


def add_ready_command(commands: Any) -> None:
    ready = commands.add_parser(
        "ready",
        help="wait until a server just started is ready; fail with its reason if it is not",
        description="Wait until the `portico serve` with process id PID answers ready on its "
        "HTTP port: --url or --http-port when given, else the one its start-up line in --log "
        "names, else the one its own command line and environment give. Exits 1 with the "
        "reason when it exits first, when another server answers on that port, or at the "
        "timeout.",
    )
    ready.add_argument("--pid", type=int, required=True, help="the server's process id ($!)")
    ready.add_argument("--log", type=Path, help="the server's log: its port, and why it stopped")
    ready.add_argument("--timeout", type=float, default=60.0, help="seconds to wait (default: 60)")
    where = ready.add_mutually_exclusive_group()
    where.add_argument("--url", help="the server's base URL, e.g. http://127.0.0.1:8090")
    where.add_argument(
        "--http-port", type=int, help="the server's HTTP port on PORTICO_HTTP_HOST (127.0.0.1)"
    )
    ready.set_defaults(run=_ready)


@dataclass(frozen=True)
class Where:
    """Where the server answers (``base``, empty while nothing says), how that was found, and
    whether the server itself said so or this shell only guesses."""

    base: str
    whence: str
    certain: bool = True


def _ready(args: argparse.Namespace) -> None:
    deadline = time.monotonic() + args.timeout
    heard = "nothing answered"
    while True:
        if not _alive(args.pid):
            raise SystemExit(_exited(args.pid, args.log))
        where = server_url(args, os.environ)
        url = where.base.rstrip("/") + "/readyz" if where.base else ""
        answered = _ask(url) if url else None
        if answered is not None:
            status, pid, body = answered
            if pid != str(args.pid):
                other = f"another server (pid {pid or 'unknown'}) answers on {url}"
                if where.certain:
                    raise SystemExit(
                        f"portico: {other}; the server {args.pid} cannot use that port"
                    )
                heard = other  # a guess at its port: it may still say another one
            elif status == 200:
                print(body)
                return
            else:
                heard = f"it answered {status} {body} at {url}"
        if time.monotonic() > deadline:
            at = f" at {url}" if url and heard == "nothing answered" else ""
            raise SystemExit(
                f"portico: the server {args.pid} was not ready in {args.timeout:g} s "
                f"({heard}{at}; {where.whence})"
            )
        time.sleep(POLL_SECONDS)


def server_url(args: argparse.Namespace, environ: Mapping[str, str]) -> Where:
    """Where the server answers: as the flags, its start-up line, or its own command line and
    environment say, else as this shell's settings would have it."""
    if args.url:
        return Where(args.url, "as --url says")
    if args.http_port is not None:
        given = {**environ, "PORTICO_HTTP_PORT": str(args.http_port)}
        return Where(_base(probe_url(given)), "as --http-port says")
    if args.log is not None:
        found = _start_line_url(args.log)
        if found:
            return Where(found, "as its start-up line in the log says")
    own = _own_settings(args.pid)
    if own == FREE_PORT:
        return Where(
            "",
            "it serves on port 0, any free one, and no start-up line names it yet: give its "
            "log with --log, or --url",
            certain=False,
        )
    if own is not None:
        return Where(_base(probe_url(own)), "the port of its own command line and environment")
    return Where(
        _base(probe_url(environ)),
        "the port this shell's PORTICO_HTTP_PORT gives, else 8080: give --url or --http-port "
        "where it serves elsewhere",
        certain=False,
    )


def _base(health_url: str) -> str:
    return health_url.removesuffix("/healthz")


def _start_line_url(log: Path) -> str:
    """The URL of the last start-up line in ``log``, if it has one yet."""
    try:
        with log.open("rb") as text:
            head = text.read(MAX_LOG_BYTES).decode(errors="replace")
    except OSError:
        return ""
    found = START_LINE.findall(head)
    return found[-1] if found else ""


def _own_settings(pid: int) -> dict[str, str] | None:
    """The HTTP settings the process ``pid`` (a ``portico serve``) runs with, as the variables
    ``probe_url`` reads: its flags over its environment; None when they cannot be read (not this
    user's process, no /proc) or name no port yet (0: any free one)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        environ_text = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    except OSError:
        return None
    environ = dict(item.partition("=")[::2] for item in environ_text.split("\0") if "=" in item)
    parsed = _serve_flags(argv[:-1] if argv and not argv[-1] else argv)
    if parsed is None:
        return None
    port = parsed.http_port if parsed.http_port is not None else environ.get("PORTICO_HTTP_PORT")
    if str(port).strip() == "0":
        return FREE_PORT  # any free one: only its start-up line says which
    found = {
        "PORTICO_HTTP_HOST": parsed.http_host or environ.get("PORTICO_HTTP_HOST", "127.0.0.1"),
        "PORTICO_HTTP_PORT": str(port or 8080),
    }
    if parsed.tls_cert or environ.get("PORTICO_TLS_CERT"):
        found["PORTICO_TLS_CERT"] = "yes"
    return found


def _serve_flags(argv: list[str]) -> argparse.Namespace | None:
    """A ``portico serve`` command line's flags, read by the server's own parser."""
    if "serve" not in argv:
        return None
    from app.cli.commands import _parser  # imported when asked: ready is imported by it

    try:
        with contextlib.redirect_stderr(io.StringIO()):  # argparse's complaint is not ours
            return _parser().parse_args(argv[argv.index("serve") :])
    except SystemExit:  # not a command line portico reads
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # somebody else's process: alive, if not ours
        return True
    # A child of this shell that has exited but not been reaped is a zombie: gone in all but name.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def _ask(url: str) -> tuple[int, str, str] | None:
    """``/readyz``'s status, server pid and body; None when nothing answers yet."""
    from app.gateway.routes import SERVER_PID_HEADER  # imported when asked: fastapi is large

    try:
        with urllib.request.urlopen(url, timeout=2, context=loopback_tls(url)) as reply:
            return reply.status, reply.headers.get(SERVER_PID_HEADER, ""), reply.read().decode()
    except urllib.error.HTTPError as exc:  # 503: not ready, and the body says why
        return (
            exc.code,
            exc.headers.get(SERVER_PID_HEADER, ""),
            exc.read(4096).decode(errors="replace"),
        )
    except OSError:
        return None


def _exited(pid: int, log: Path | None) -> str:
    reason = ""
    if log is not None:
        try:
            lines = log.read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        said = [line for line in lines if line.startswith("portico:")]
        reason = said[-1].removeprefix("portico:").strip() if said else ""
        if not reason and lines:
            reason = f"its log ends: {lines[-1].strip()}"
    return f"portico: the server {pid} exited before it was ready" + (
        f": {reason}" if reason else ""
    )
