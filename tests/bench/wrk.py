"""wrk (Debian's package) as a load generator that says what it delivered, not only how fast.

Every run records the requests wrk completed, how many had a status outside 2xx/3xx, its socket
errors (connect, read, write, timeout), the rate it reached, and its whole latency histogram
(which a script's ``done`` prints), so that several runs of one row, taken in turns with other
rows, add up to exactly the percentiles of all their requests. A closed-loop generator expects
every request it sends to be answered with success: ``errors`` is everything else.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
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
# Appended to every script: the run's length and its latency histogram (microseconds, each
# value seen and how many requests took it), which wrk keeps but does not print.
HISTOGRAM_LUA = """
done = function(summary, latency, requests)
  local seen = {}
  for i = 1, #latency do
    local value, count = latency(i)
    seen[#seen + 1] = value .. ":" .. count
  end
  io.write("duration-us ", summary.duration, "\\n")
  io.write("latency-us ", table.concat(seen, ","), "\\n")
end
"""


@dataclass
class Slice:
    """What one wrk run sent and got: its requests, replies outside 2xx/3xx, socket errors, its
    length, and how many requests took each latency (microseconds)."""

    requests: int
    non_2xx: int
    socket_errors: dict[str, int]
    seconds: float
    latency_us: Counter[int]


def lua_list(values: list[str]) -> str:
    """A Lua table literal of strings (JSON string escapes are Lua's for these)."""
    return "{" + ",".join(json.dumps(v) for v in values) + "}"


def rotate_script(paths: list[str], tokens: list[str] | None = None) -> str:
    """A script sending GETs to ``paths`` in turn, each with the next of ``tokens`` if any."""
    return ROTATE_LUA.replace("PATHS", lua_list(paths)).replace("TOKENS", lua_list(tokens or []))


def measure(
    url: str,
    seconds: float,
    token: str,
    cpus: str,
    script: str = "",
    connections: int = CONNECTIONS,
) -> Slice:
    """One wrk run of whole seconds (at least one), as a :class:`Slice`."""
    if re.search(r"\bdone\s*=|function\s+done\b", script):
        raise ValueError("the script's done function would replace the histogram's")
    args = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s"]
    args += [f"--timeout={TIMEOUT_SECONDS}s"]
    args += ["-H", f"Authorization: Bearer {token}"] if token else []
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
        lua.write(script + HISTOGRAM_LUA)
    try:
        args += ["-s", lua.name]
        if cpus and shutil.which("taskset"):
            args = ["taskset", "-c", cpus, *args]
        out = subprocess.run([*args, url], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(lua.name)
    return parse_slice(out)


def parse_slice(out: str) -> Slice:
    """The numbers of wrk's summary and of the histogram script's lines."""
    sockets = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out
    )
    socket_errors = dict(
        zip(("connect", "read", "write", "timeout"), map(int, sockets.groups()), strict=True)
        if sockets
        else {}
    )
    latency: Counter[int] = Counter()
    for pair in filter(None, _find(r"latency-us ([\d:,]*)", out).split(",")):
        value, count = pair.split(":")
        latency[int(value)] += int(count)
    return Slice(
        requests=int(_find(r"(\d+) requests in", out)),
        non_2xx=int(_find(r"Non-2xx or 3xx responses: (\d+)", out, "0")),
        socket_errors=socket_errors,
        seconds=int(_find(r"duration-us (\d+)", out)) / 1e6,
        latency_us=latency,
    )


def summary(slices: list[Slice]) -> dict[str, Any]:
    """The numbers of one row measured in ``slices``: their requests over their time, and the
    percentiles of all their requests together."""
    requests = sum(s.requests for s in slices)
    non_2xx = sum(s.non_2xx for s in slices)
    socket_errors: Counter[str] = Counter()
    latency: Counter[int] = Counter()
    for s in slices:
        socket_errors.update(s.socket_errors)
        latency.update(s.latency_us)
    return {
        "rps": requests / sum(s.seconds for s in slices),
        "p50_ms": percentile_us(latency, 50) / 1000,
        "p99_ms": percentile_us(latency, 99) / 1000,
        "requests": requests,
        "ok": requests - non_2xx,
        "non_2xx": non_2xx,
        "socket_errors": dict(socket_errors) if any(s.socket_errors for s in slices) else {},
        "errors": non_2xx + sum(socket_errors.values()),
    } | ({"slices": len(slices)} if len(slices) > 1 else {})


def percentile_us(latency: Counter[int], percent: float) -> int:
    """The smallest latency that ``percent`` % of the requests took at most (0 for none)."""
    wanted = math.ceil(sum(latency.values()) * percent / 100)
    seen = 0
    for value in sorted(latency):
        seen += latency[value]
        if seen >= wanted:
            return value
    return 0


def _find(pattern: str, text: str, default: str | None = None) -> str:
    found = re.search(pattern, text)
    if found:
        return found.group(1)
    if default is None:
        raise ValueError(f"wrk's summary lacks {pattern!r}:\n{text}")
    return default
