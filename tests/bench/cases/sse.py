"""SSE subscribers of ``ListenEvents``: does every subscriber get every change, and how soon?

The producer stops and starts scheduler instances at a paced rate and records every call: the
moment it was sent, and whether it succeeded (a failed call is an error, counted). A Stop
completes when the instance's simulated node next reports: the producer follows the event log
itself and starts only instances whose ``POD_EXITED`` it has seen (the server rightly refuses
to start a STOPPING one); a turn with none ready sends no Start and is counted. A Start
writes its ``POD_PREPARED`` event in the call itself, so each successful Start is an event every
subscriber must get: expected = successful Starts x open subscribers, delivered = those of them
that arrived. The delay is timed from the moment the Start was sent (an upper bound of the time
from its commit) to each subscriber's copy. Every event at all (a Stop's ``POD_EXITED`` comes
later, from the simulated runtime) is checked too: every subscription is open before the
changes begin, so from the first Start's event in the log to the last one's, every subscriber
must get the same events (counted by pod and type; workers may batch and interleave them
differently); one that got fewer of any than another subscriber did missed some, an error.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import math
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from typing import Any

import httpx

from tests.bench.cases import Bench, Case, settle
from tests.bench.procs import frozen_heap, percentile

CHANGES_PER_SECOND = 10
# Enough that a stopped instance is usually ready to start again when its turn comes.
INSTANCES = 40
PREPARED = "EVENT_TYPE_POD_PREPARED"
EXITED = "EVENT_TYPE_POD_EXITED"  # a Stop has completed: the instance is STOPPED
# How long the case's instances may take to be RUNNING before the case fails.
CREATE_SECONDS = 60.0
# After the last change, how long subscribers may take to receive it before they stop reading.
DRAIN_SECONDS = 2.0


def _sse(subscribers: int) -> Any:
    def measure(bench: Bench) -> dict[str, Any]:
        return subscriber_run(bench, subscribers, max(bench.seconds, 3.0))

    return measure


def subscriber_run(bench: Bench, subscribers: int, seconds: float) -> dict[str, Any]:
    server = bench.portico
    client = httpx.Client(base_url=server.http, headers=server.headers, timeout=30)
    exits = Exits(server.http, server.headers)
    try:
        ids = running_instances(server.http, server.headers, f"sse-{subscribers}", INSTANCES)
        half = INSTANCES // 2
        # Half of them stopped first, so that Starts come from the first change on; their
        # exits (one simulated step later, all together) come before the subscribers open, so
        # what they measure is the paced changes alone.
        for instance_id in ids[half:]:
            client.post(f"/v1/scheduler/instances/{instance_id}:stop", json={}).raise_for_status()
        exits.wait_for(ids[half:], CREATE_SECONDS)
        host, port = server.http.removeprefix("http://").split(":")
        listener = bench.processes.start(
            [sys.executable, "-m", "tests.bench.sse_load", host, port, server.token,
             str(subscribers)],
            cpus=bench.load_cpus,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )  # fmt: skip
        assert listener.stdout is not None and listener.stdin is not None
        listener.stdout.readline()  # every subscription has its status line (or failed)
        settle(server.http)  # the opening of a thousand streams is over before changes start
        with frozen_heap():  # a Start is timed as it is sent: no collection in between
            starts, made, failures, waits, window = make_changes(client, exits, ids, seconds)
        time.sleep(DRAIN_SECONDS)  # let the last changes reach every subscriber
        out, _ = listener.communicate(b"stop\n", timeout=60)
        # The simulated nodes' capacity is shared: the next case's instances need it back.
        for instance_id in ids:
            client.post(f"/v1/scheduler/instances/{instance_id}:destroy", json={})
    finally:
        exits.close()
        client.close()
    result = json.loads(out)
    return summarise(result, starts, made, failures, waits, window)


class Exits:
    """The instances whose Stop has completed: a thread follows the event log (NDJSON) and
    notes every ``POD_EXITED``."""

    def __init__(self, base: str, headers: dict[str, str]) -> None:
        self._exited: set[str] = set()
        self._lock = threading.Condition()
        self._client = httpx.Client(base_url=base, headers=headers, timeout=None)
        opened = threading.Event()
        self._thread = threading.Thread(target=self._follow, args=(opened,), daemon=True)
        self._thread.start()
        opened.wait(30)  # following before any Stop is sent: no exit can be missed

    def _follow(self, opened: threading.Event) -> None:
        accept = {"accept": "application/x-ndjson"}
        try:
            with self._client.stream("GET", "/v1/runtime/events", headers=accept) as reply:
                opened.set()
                for line in reply.iter_lines():
                    if not line.strip():
                        continue  # a keep-alive
                    for event in json.loads(line).get("result", {}).get("events", ()):
                        if event["type"] == EXITED:
                            with self._lock:
                                self._exited.add(event["id"])
                                self._lock.notify_all()
        except httpx.HTTPError:
            pass  # closed by close(), or the server went away: nothing more is ready
        finally:
            opened.set()

    def forget(self, instance_id: str) -> None:
        """A Stop of ``instance_id`` is being sent: only a later exit makes it ready."""
        with self._lock:
            self._exited.discard(instance_id)

    def ready(self, instance_id: str) -> bool:
        with self._lock:
            return instance_id in self._exited

    def wait_for(self, instance_ids: list[str], timeout: float) -> None:
        """Return once every one of ``instance_ids`` has exited; TimeoutError after ``timeout``."""
        with self._lock:
            if not self._lock.wait_for(lambda: self._exited.issuperset(instance_ids), timeout):
                raise TimeoutError(f"instances not stopped within {timeout} s")

    def close(self) -> None:
        self._client.close()
        self._thread.join(timeout=10)


def make_changes(
    client: httpx.Client, exits: Exits, ids: list[str], seconds: float
) -> tuple[dict[str, list[float]], int, dict[str, int], int, tuple[float, float]]:
    """Stop a running instance and start a stopped one in turn, paced (the first half of
    ``ids`` runs, the second half is stopped); a Start goes to the instance stopped longest
    ago whose Stop has completed, and a turn with none ready sends nothing. The moments each
    instance's Starts were sent, how many calls succeeded, how many failed for each reason
    (verb, status and message), how many Start turns found no instance ready, and when it
    began and ended."""
    starts: dict[str, list[float]] = {}
    made = failed = waits = 0
    reasons: Counter[str] = Counter()
    half = len(ids) // 2
    running, stopped = deque(ids[:half]), deque(ids[half:])
    verbs = ("stop", "start")
    began = time.time()
    turn = 0
    while (at := time.time()) < began + seconds:
        verb = verbs[turn % 2]
        turn += 1
        if verb == "stop":
            instance_id = running.popleft()
            exits.forget(instance_id)
            stopped.append(instance_id)
        else:
            ready = next((i for i in stopped if exits.ready(i)), None)
            if ready is None:
                waits += 1
                time.sleep(max(0.0, at + 1 / CHANGES_PER_SECOND - time.time()))
                continue
            instance_id = ready
            stopped.remove(instance_id)
            running.append(instance_id)
        try:
            reply = client.post(f"/v1/scheduler/instances/{instance_id}:{verb}", json={})
            ok = reply.is_success
            if not ok:
                reasons[f"{verb}: {reply.status_code} {_message(reply)}"] += 1
        except httpx.HTTPError as error:
            ok = False
            reasons[f"{verb}: {type(error).__name__}"] += 1
        made += ok
        failed += not ok
        if ok and verb == "start":
            starts.setdefault(instance_id, []).append(at)
        time.sleep(max(0.0, at + 1 / CHANGES_PER_SECOND - time.time()))
    return starts, made, dict(reasons), waits, (began, time.time())


def summarise(
    result: dict[str, Any],
    starts: dict[str, list[float]],
    made: int,
    failures: dict[str, int],
    waits: int,
    window: tuple[float, float],
) -> dict[str, Any]:
    failed = sum(failures.values())
    subscribers = len(result["arrivals"])
    open_count = len(result["ttfb_s"])
    expected = sum(map(len, starts.values())) * open_count
    delays: list[float] = []
    gaps, checked = missed_events(result["arrivals"], starts)
    elapsed = window[1] - window[0]
    for events in result["arrivals"]:
        delays += start_delays(starts, events)
    ttfb = sorted(result["ttfb_s"])
    delays.sort()
    return {
        "subscribers": subscribers,
        "open": open_count,
        "refused": len(result["refused"]),
        "ttfb_p50_ms": percentile(ttfb, 0.5) * 1000,
        "ttfb_p99_ms": percentile(ttfb, 0.99) * 1000,
        "changes_made": made,
        "change_errors": failed,
        "change_failures": failures,
        "start_waits": waits,
        "changes_per_second": made / elapsed if elapsed else math.nan,
        "expected": expected,
        "delivered": len(delays),
        "events_checked_each": checked,
        "subscribers_missing_events": gaps,
        "event_p50_ms": percentile(delays, 0.5) * 1000,
        "event_p99_ms": percentile(delays, 0.99) * 1000,
        "errors": failed + len(result["refused"]) + (expected - len(delays)) + gaps,
    }


def missed_events(
    arrivals: list[list[list[Any]]], starts: dict[str, list[float]]
) -> tuple[int, int]:
    """How many subscribers got fewer of some event (pod, type) than another subscriber did,
    from the first Start's event in the log to the last one's, and how many events each was
    checked for.

    Arrival times cannot mark the bounds: a worker that learns of changes by polling gets them
    a little later, and events after the last Start may still be on their way when the
    subscribers stop reading. The SSE id (the log revision of a message's last event) can: the
    first Start's copy has the lowest, the last one's the highest that all must have got.
    """
    if not starts:
        return 0, 0

    def place(pod: str, sent: float, lowest: bool) -> float:
        found = [e[3] for events in arrivals for e in events
                 if e[0] == pod and e[1] == PREPARED and e[2] >= sent]  # fmt: skip
        return (min if lowest else max)(found, default=math.inf if lowest else -math.inf)

    first = min((times[0], pod) for pod, times in starts.items())
    last = max((times[-1], pod) for pod, times in starts.items())
    since, until = place(first[1], first[0], True), place(last[1], last[0], False)
    counts = [
        Counter((e[0], e[1]) for e in events if since <= e[3] <= until) for events in arrivals
    ]
    every: Counter[tuple[str, str]] = Counter()
    for count in counts:
        every |= count  # the most of each that any subscriber got
    return sum(bool(every - count) for count in counts), every.total()


def start_delays(starts: dict[str, list[float]], events: list[list[Any]]) -> list[float]:
    """For each Start one subscriber got, the delay from the Start to its ``POD_PREPARED``."""
    delays = []
    for instance_id, sent in starts.items():
        arrived = sorted(e[2] for e in events if e[0] == instance_id and e[1] == PREPARED)
        for i, at in enumerate(sent):
            until = sent[i + 1] if i + 1 < len(sent) else math.inf
            # The first copy after this Start and before the next one is this Start's.
            j = bisect.bisect_left(arrived, at)
            if j < len(arrived) and arrived[j] < until:
                delays.append(arrived[j] - at)
    return delays


def running_instances(base: str, headers: dict[str, str], prefix: str, count: int) -> list[str]:
    """Create ``count`` scheduler instances at once; their ids, once every one is RUNNING
    (a Stop is refused before), as each one's Create stream says."""

    async def create(client: httpx.AsyncClient, name: str) -> str:
        body = {
            "name": name,
            "type": "CONTAINER",
            "uri": "docker.io/library/nginx:1.27",
            "resource": {"limit": {"cpu": 1, "memory": 64, "disk": 1}},
        }
        async with client.stream("POST", "/v1/scheduler/instances", json=body) as reply:
            reply.raise_for_status()
            async for line in reply.aiter_lines():
                if not line.strip():
                    continue  # a keep-alive between statuses
                status = json.loads(line)["result"]
                # RUNNING is the enum's zero value, which JSON leaves out.
                if status.get("status", "RUNNING") == "RUNNING":
                    return str(status["id"])
        raise RuntimeError(f"instance {name} never reported RUNNING")

    async def create_all() -> list[str]:
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
            # Bounded: an instance with no node to run on stays SCHEDULING (its stream open,
            # kept alive), which would hang the run instead of failing the case.
            async with asyncio.timeout(CREATE_SECONDS):
                return list(
                    await asyncio.gather(*(create(client, f"{prefix}-{i}") for i in range(count)))
                )

    return asyncio.run(create_all())


def describe(r: dict[str, Any]) -> str:
    return (
        f"{r['open']} of {r['subscribers']} open ({r['refused']} refused), TTFB p50 "
        f"{r['ttfb_p50_ms']:.1f} ms, p99 {r['ttfb_p99_ms']:.1f} ms; {r['changes_made']} changes "
        f"at {r['changes_per_second']:.1f}/s ({r['change_errors']} calls failed"
        f"{_reasons(r.get('change_failures', {}))}; {r.get('start_waits', 0)} Start turns "
        f"waited for a Stop to complete); delivered "
        f"{r['delivered']:,} of {r['expected']:,} expected, event p50 {r['event_p50_ms']:.1f} ms, "
        f"p99 {r['event_p99_ms']:.1f} ms; {r['subscribers_missing_events']} subscribers missed "
        f"any of the {r['events_checked_each']:,} events from the first Start to the last"
    )


def _reasons(failures: dict[str, int]) -> str:
    return "".join(f"; {count} x {reason}" for reason, count in sorted(failures.items()))


def _message(reply: httpx.Response) -> str:
    """The Status message of a refused call, cut short (it names what was refused)."""
    try:
        return str(reply.json().get("message", ""))[:80]
    except ValueError:
        return reply.text[:80]


# One count, the target's: a run of 100 subscribers as well told little more and cost the
# benchmark about a tenth of its five minutes.
SUBSCRIBERS = 1_000
CASES = [
    Case(
        f"sse_{SUBSCRIBERS}",
        f"SSE {SUBSCRIBERS:,} subscribers",
        "main",
        _sse(SUBSCRIBERS),
        describe,
    )
]
