"""``portico ready``: wait until the server just started is ready, or say why it never will be.

``curl --retry ... /readyz`` cannot tell a server that failed to start (its reason is only in its
log) from another one already answering on the same port. Given the pid of the ``portico serve``
it waits for (``$!`` in a shell), this command tells them apart: that process must be alive and
must be the one answering (``/readyz`` names its server's pid); if it exits first, the reason is
the last ``portico:`` line of its log.
"""

from __future__ import annotations

import argparse
import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from app.cli.healthcheck import loopback_tls, probe_url
from app.gateway.routes import SERVER_PID_HEADER

POLL_SECONDS = 0.2


def add_ready_command(commands: Any) -> None:
    ready = commands.add_parser(
        "ready",
        help="wait until a server just started is ready; fail with its reason if it is not",
        description="Wait until the `portico serve` with process id PID answers ready on its "
        "HTTP port (PORTICO_HTTP_HOST/PORT, PORTICO_TLS_CERT as serve reads them). Exits 1 with "
        "the reason when it exits first, when another server answers on that port, or at the "
        "timeout.",
    )
    ready.add_argument("--pid", type=int, required=True, help="the server's process id ($!)")
    ready.add_argument("--log", type=Path, help="the server's log, for the reason it stopped")
    ready.add_argument("--timeout", type=float, default=60.0, help="seconds to wait (default: 60)")
    ready.set_defaults(run=_ready)


def _ready(args: argparse.Namespace) -> None:
    url = probe_url(os.environ).removesuffix("/healthz") + "/readyz"
    deadline = time.monotonic() + args.timeout
    while True:
        if not _alive(args.pid):
            raise SystemExit(_exited(args.pid, args.log))
        answered = _ask(url)
        if answered is not None:
            status, pid, body = answered
            if pid != str(args.pid):
                raise SystemExit(
                    f"portico: another server (pid {pid or 'unknown'}) answers on {url}; "
                    f"the server {args.pid} cannot use that port"
                )
            if status == 200:
                print(body)
                return
        if time.monotonic() > deadline:
            heard = f"it answered {answered[0]} {answered[2]}" if answered else "nothing answered"
            raise SystemExit(
                f"portico: the server {args.pid} was not ready in {args.timeout:g} s "
                f"({heard} at {url}; is PORTICO_HTTP_PORT the one it serves on?)"
            )
        time.sleep(POLL_SECONDS)


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
