"""What a pod's app writes while it runs: simulated, seeded output in the image's own log style.

No container runs, so the output is made up, but reproducibly: while the app is up (from a
RUNNING transition to the next transition) it writes about one line per ``interval_ns``; line
``k`` of a run lands at ``start + k * interval + jitter`` with the jitter and the content fixed by
a hash of (pod, run start, k). Any window of lines is computed directly, without the lines
before it, so a pod up for months costs no more than one up for a minute.

Styles by image base name: nginx writes access-log lines, redis and etcd their server logs,
postgres its log lines; any other image writes generic request lines.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from app.services.kudo.images import parse_reference
from app.services.kudo.records import InstanceRecord
from app.sim.seeded import digest
from gen.scheduler import scheduler_pb2 as spb

Run = tuple[int, int | None, str]  # (start ns, end ns or None while running, node)

_PATHS = ("/", "/index.html", "/api/v1/items", "/healthz", "/static/app.js", "/favicon.ico")
_AGENTS = ("curl/8.5.0", "kube-probe/1.31", "Mozilla/5.0 (X11; Linux x86_64)", "Go-http-client/1.1")


def runs(instance: InstanceRecord) -> list[Run]:
    """The periods the app was up, oldest first."""
    found: list[Run] = []
    history = instance.history
    for index, transition in enumerate(history):
        if transition.status == spb.RUNNING:
            end = history[index + 1].at_ns if index + 1 < len(history) else None
            found.append((transition.at_ns, end, transition.node))
    return found


def _pick(seed: bytes, offset: int, choices: tuple[str, ...]) -> str:
    return choices[seed[offset] % len(choices)]


def _nginx(seed: bytes, when: datetime) -> str:
    client = f"10.{seed[0] % 200 + 20}.{seed[1]}.{seed[2] % 254 + 1}"
    status = 404 if seed[3] % 10 == 0 else 200
    size = 153 if status == 404 else 200 + int.from_bytes(seed[4:6], "big") % 9000
    stamp = when.strftime("%d/%b/%Y:%H:%M:%S +0000")
    method = "POST" if seed[6] % 7 == 0 else "GET"
    path, agent = _pick(seed, 7, _PATHS), _pick(seed, 8, _AGENTS)
    return f'{client} - - [{stamp}] "{method} {path} HTTP/1.1" {status} {size} "-" "{agent}"'


def _redis(seed: bytes, when: datetime) -> str:
    stamp = when.strftime("%d %b %Y %H:%M:%S.") + f"{when.microsecond // 1000:03d}"
    changes = seed[1] % 100 + 1
    message = _pick(
        seed,
        0,
        (
            f"{changes} changes in 60 seconds. Saving...",
            "Background saving started by pid 41",
            "DB saved on disk",
            "Background saving terminated with success",
        ),
    )
    return f"1:M {stamp} * {message}"


def _etcd(seed: bytes, when: datetime) -> str:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond:06d}Z"
    revision = int.from_bytes(seed[1:4], "big")
    message = _pick(
        seed,
        0,
        (
            f'"finished scheduled compaction","compact-revision":{revision}',
            '"serving client traffic insecurely","address":"[::]:2379"',
            f'"saved snapshot","snapshot-index":{revision}',
        ),
    )
    return f'{{"level":"info","ts":"{stamp}","msg":{message}}}'


def _postgres(seed: bytes, when: datetime) -> str:
    stamp = when.strftime("%Y-%m-%d %H:%M:%S.") + f"{when.microsecond // 1000:03d} UTC"
    buffers = seed[1] % 64 + 1
    message = _pick(
        seed,
        0,
        (
            "checkpoint starting: time",
            f"checkpoint complete: wrote {buffers} buffers ({buffers / 10:.1f}%)",
            'automatic vacuum of table "app.public.items": index scans: 0',
        ),
    )
    return f"{stamp} [{seed[2] + 60}] LOG:  {message}"


def _generic(seed: bytes, when: datetime) -> str:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    took = seed[1] % 250 + 1
    method, path = _pick(seed, 0, ("GET", "POST", "PUT")), _pick(seed, 2, _PATHS)
    return f"{stamp} INFO handled {method} {path} in {took}ms"


_STYLES: dict[str, Callable[[bytes, datetime], str]] = {
    "nginx": _nginx,
    "redis": _redis,
    "etcd": _etcd,
    "postgres": _postgres,
}


def _style(uri: str) -> Callable[[bytes, datetime], str]:
    base = parse_reference(uri).name.rsplit("/", 1)[-1]
    return _STYLES.get(base, _generic)


def app_lines(
    instance: InstanceRecord, interval_ns: int, start_ns: int, end_ns: int, limit: int
) -> list[tuple[int, str, str]]:
    """The latest ``limit`` lines the app wrote in ``[start_ns, end_ns)``, oldest first, as
    (at ns, node, text)."""
    style = _style(instance.uri)
    found: list[tuple[int, str, str]] = []
    for run_start, run_end, node in reversed(runs(instance)):
        low = max(start_ns, run_start)
        high = end_ns if run_end is None else min(end_ns, run_end)
        if high <= low:
            continue
        k = (high - run_start) // interval_ns
        while k >= 0 and len(found) < limit:
            seed = digest("app-output", instance.id, run_start, k)
            at = run_start + k * interval_ns + int.from_bytes(seed[:4], "big") % interval_ns
            k -= 1
            if at >= high:
                continue
            if at < low:
                break
            found.append((at, node, style(seed[4:], datetime.fromtimestamp(at / 1e9, UTC))))
        if len(found) >= limit:
            break
    found.reverse()
    return found
