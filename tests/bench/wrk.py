"""wrk (Debian's package) as a load generator that says what it delivered, not only how fast.

Every run records the requests wrk completed, how many had a status outside 2xx/3xx, its socket
errors (connect, read, write, timeout) and the rate it reached. A closed-loop generator expects
every request it sends to be answered with success: ``errors`` is everything else.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from typing import Any

CONNECTIONS = 64
TIMEOUT_SECONDS = 5  # a reply slower than this counts as an error (wrk's "timeout")

# wrk.format's own headers would replace those given with -H (the token): extend those instead.
# Each request takes the next entry of PATHS and of TOKENS, round robin (one wrk thread).
ROTATE_LUA = """
local paths = PATHS
local tokens = TOKENS
local i = 0
request = function()
  i = i + 1
  if #tokens > 0 then
    wrk.headers["Authorization"] = "Bearer " .. tokens[(i % #tokens) + 1]
  end
  return wrk.format(nil, paths[(i % #paths) + 1])
end
"""


def lua_list(values: list[str]) -> str:
    """A Lua table literal of strings (JSON string escapes are Lua's for these)."""
    return "{" + ",".join(json.dumps(v) for v in values) + "}"


def rotate_script(paths: list[str], tokens: list[str] | None = None) -> str:
    """A script sending GETs to ``paths`` in turn, each with the next of ``tokens`` if any."""
    return ROTATE_LUA.replace("PATHS", lua_list(paths)).replace("TOKENS", lua_list(tokens or []))


def run(
    url: str,
    seconds: float,
    token: str,
    cpus: str,
    script: str = "",
    connections: int = CONNECTIONS,
) -> dict[str, Any]:
    """One wrk run: what it sent and got, the rate it reached and p50/p99 latency (ms)."""
    args = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency"]
    args += [f"--timeout={TIMEOUT_SECONDS}s"]
    args += ["-H", f"Authorization: Bearer {token}"] if token else []
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
        lua.write(script)
    try:
        args += ["-s", lua.name] if script else []
        if cpus and shutil.which("taskset"):
            args = ["taskset", "-c", cpus, *args]
        out = subprocess.run([*args, url], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(lua.name)
    return parse(out) | ({} if connections == CONNECTIONS else {"connections": connections})


def parse(out: str) -> dict[str, Any]:
    """The numbers of wrk's summary."""
    requests = int(_find(r"(\d+) requests in", out))
    non_2xx = int(_find(r"Non-2xx or 3xx responses: (\d+)", out, "0"))
    sockets = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out
    )
    socket_errors = dict(
        zip(("connect", "read", "write", "timeout"), map(int, sockets.groups()), strict=True)
        if sockets
        else {}
    )
    errors = non_2xx + sum(socket_errors.values())
    return {
        "rps": float(_find(r"Requests/sec:\s+([\d.]+)", out)),
        "p50_ms": _ms(_find(r"50%\s+([\d.]+\w+)", out)),
        "p99_ms": _ms(_find(r"99%\s+([\d.]+\w+)", out)),
        "requests": requests,
        "ok": requests - non_2xx,
        "non_2xx": non_2xx,
        "socket_errors": socket_errors,
        "errors": errors,
    }


def _find(pattern: str, text: str, default: str | None = None) -> str:
    found = re.search(pattern, text)
    if found:
        return found.group(1)
    if default is None:
        raise ValueError(f"wrk's summary lacks {pattern!r}:\n{text}")
    return default


def _ms(text: str) -> float:
    value, unit = re.match(r"([\d.]+)(\w+)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]
