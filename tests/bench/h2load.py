"""h2load (Debian's nghttp2-client) as the native gRPC load generator, saying what it delivered.

HTTP/2 with prior knowledge, ``-c16 -m8`` (16 connections of 8 streams each, as gRPC clients
multiplex), POSTing one gRPC envelope. A gRPC error is still HTTP 200, its status in the
trailers, which h2load does not read: so a reply counts as a success only by its bytes. The case
knows the size of one good reply's data (``reply_bytes``); the replies h2load received data for,
``data / reply_bytes``, are the successes, and the rest of the requests are errors (a refusal is
Trailers-Only, with no data at all). Latencies come from h2load's per-request log, so slices of
one row add up to the percentiles of all their requests, as :mod:`tests.bench.wrk`'s do.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from tests.bench.wrk import Slice

CLIENTS = 16
STREAMS = 8
_REQUESTS = re.compile(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded")
_DATA = re.compile(r"traffic: .*?, [\d.]+\w* \((\d+)\) data")
_FINISHED = re.compile(r"finished in ([\d.]+)(ms|s),")


def measure(
    url: str, seconds: float, token: str, cpus: str, body: bytes, reply_bytes: int
) -> Slice:
    """One h2load run of ``seconds`` POSTing ``body`` (a gRPC envelope) to ``url``."""
    with tempfile.TemporaryDirectory() as folder:
        request = Path(folder) / "request.bin"
        request.write_bytes(body)
        log = Path(folder) / "requests.log"
        args = ["h2load", f"-c{CLIENTS}", f"-m{STREAMS}", f"-D{max(1, round(seconds))}"]
        args += ["-d", str(request), f"--log-file={log}"]
        args += ["-H", "content-type: application/grpc", "-H", "te: trailers"]
        args += ["-H", f"authorization: Bearer {token}"] if token else []
        if cpus and shutil.which("taskset"):
            args = ["taskset", "-c", cpus, *args]
        out = subprocess.run([*args, url], capture_output=True, text=True, check=True).stdout
        latency = Counter(
            int(line.split("\t")[2]) for line in log.read_text().splitlines() if line.strip()
        )
    return parse(out, reply_bytes, latency)


def parse(out: str, reply_bytes: int, latency: Counter[int]) -> Slice:
    """A :class:`Slice` from h2load's summary; every request without a good reply's bytes is
    counted in ``non_2xx`` (a refusal or a failure), requests h2load never finished in
    ``socket_errors``."""
    requests = _REQUESTS.search(out)
    data = _DATA.search(out)
    finished = _FINISHED.search(out)
    if requests is None or data is None or finished is None:
        raise RuntimeError(f"h2load printed no summary: {out[-500:]}")
    total, done, _ = (int(n) for n in requests.groups())
    good = int(data.group(1)) // reply_bytes
    seconds = float(finished.group(1)) / (1000 if finished.group(2) == "ms" else 1)
    unfinished = total - done
    return Slice(
        requests=done,
        non_2xx=max(0, done - good),
        socket_errors={"unfinished": unfinished} if unfinished else {},
        seconds=seconds,
        latency_us=latency,
    )
