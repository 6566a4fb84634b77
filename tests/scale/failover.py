"""The leader SIGKILLed while calls and watches run through the load balancer.

Creators make clusters through HAProxy, each with an ``Idempotency-Key`` and retried (same key)
when a reply is lost, as a careful client does; readers read seeded clusters; watchers follow
``ListenEvents`` over SSE (resuming with ``Last-Event-ID``) and over NDJSON (starting again),
reconnecting through HAProxy whenever their stream ends. Halfway, the leader's process group is
SIGKILLed. Afterwards: every error seen, how long until another replica led, whether every
acknowledged create can be read back, and whether every watcher got the changes made after
every watcher had reconnected.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.bench.servers import CLUSTER_BODY, k8s_version
from tests.scale.cluster import Deployment
from tests.scale.haproxy import StateLog

CREATORS = 8
READERS = 8
WATCHERS = 20  # half SSE, half NDJSON
RETRIES = 10
PREPARED = "EVENT_TYPE_POD_PREPARED"
MARKERS = 3  # rounds of Stop and Start once every watcher is back: every watcher must see them


@dataclass
class Watcher:
    sse: bool
    events: list[tuple[str, str, float]] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)
    connects: int = 0
    connected: bool = False
    errors: Counter[str] = field(default_factory=Counter)


@dataclass
class Tally:
    acknowledged: list[str] = field(default_factory=list)
    failed_creates: list[str] = field(default_factory=list)
    create_errors: Counter[str] = field(default_factory=Counter)  # attempts that failed
    create_errors_after_kill: list[float] = field(default_factory=list)
    reads: int = 0
    read_errors: Counter[str] = field(default_factory=Counter)
    read_errors_after_kill: list[float] = field(default_factory=list)


def _error(reply: httpx.Response | None, exc: BaseException | None) -> str:
    return f"HTTP {reply.status_code}" if reply is not None else type(exc).__name__


async def creator(client: httpx.AsyncClient, version: str, until: float, tally: Tally,
                  killed: list[float]) -> None:  # fmt: skip
    while time.monotonic() < until:
        name = f"f-{uuid.uuid4().hex[:12]}"
        body = dict(CLUSTER_BODY, name=name, k8s_version=version)
        key = uuid.uuid4().hex
        for _ in range(RETRIES):
            reply, exc = None, None
            try:
                reply = await client.post(
                    "/api/v1/cluster", json=body, headers={"idempotency-key": key}
                )
            except httpx.HTTPError as error:
                exc = error
            if reply is not None and reply.status_code == 200:
                tally.acknowledged.append(name)
                break
            tally.create_errors[_error(reply, exc)] += 1
            if killed:
                tally.create_errors_after_kill.append(time.monotonic() - killed[0])
            await asyncio.sleep(0.2)
        else:
            tally.failed_creates.append(name)


async def reader(client: httpx.AsyncClient, names: list[str], until: float, tally: Tally,
                 killed: list[float]) -> None:  # fmt: skip
    i = 0
    while time.monotonic() < until:
        i += 1
        reply, exc = None, None
        try:
            reply = await client.get(f"/api/v1/cluster?name={names[i % len(names)]}")
        except httpx.HTTPError as error:
            exc = error
        tally.reads += 1
        if reply is None or reply.status_code != 200:
            tally.read_errors[_error(reply, exc)] += 1
            if killed:
                tally.read_errors_after_kill.append(time.monotonic() - killed[0])
            await asyncio.sleep(0.05)


async def watch(base: str, token: str, watcher: Watcher, stop: asyncio.Event) -> None:
    """Follow ListenEvents until ``stop``, reconnecting whenever the stream ends."""
    accept = "text/event-stream" if watcher.sse else "application/x-ndjson"
    timeout = httpx.Timeout(10, read=None)
    async with httpx.AsyncClient(base_url=base, timeout=timeout) as client:
        while not stop.is_set():
            headers = {"authorization": f"Bearer {token}", "accept": accept}
            if watcher.sse and watcher.ids:
                headers["last-event-id"] = str(watcher.ids[-1])
            try:
                async with client.stream("GET", "/v1/runtime/events", headers=headers) as reply:
                    if reply.status_code != 200:
                        watcher.errors[f"HTTP {reply.status_code}"] += 1
                        await asyncio.sleep(0.2)
                        continue
                    watcher.connects += 1
                    watcher.connected = True
                    await _read_events(reply, watcher)
                watcher.errors["stream ended"] += 1
            except httpx.HTTPError as error:
                watcher.errors[type(error).__name__] += 1
            watcher.connected = False
            await asyncio.sleep(0.2)


async def _read_events(reply: httpx.Response, watcher: Watcher) -> None:
    async for line in reply.aiter_lines():
        if watcher.sse and line.startswith("id:"):
            watcher.ids.append(int(line[3:].strip()))
            continue
        text = line[5:] if watcher.sse and line.startswith("data:") else line
        if not text.strip() or (watcher.sse and not line.startswith("data:")):
            continue
        now = time.time()
        for event in json.loads(text).get("result", {}).get("events", ()):
            watcher.events.append((event["id"], event["type"], now))


async def toggle(client: httpx.AsyncClient, ids: list[str], verb: str) -> tuple[int, int]:
    """``verb`` (start or stop) every instance; how many calls succeeded and failed."""
    replies = await asyncio.gather(
        *(client.post(f"/v1/scheduler/instances/{i}:{verb}", json={}) for i in ids),
        return_exceptions=True,
    )
    ok = sum(isinstance(r, httpx.Response) and r.is_success for r in replies)
    return ok, len(replies) - ok


async def failover(
    deployed: Deployment, token: str, names: list[str], instances: list[str], seconds: float
) -> dict[str, Any]:
    """Run the load, SIGKILL the leader at ``seconds / 2``, and say what was seen."""
    headers = {"authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=CREATORS + READERS + 8)
    client = httpx.AsyncClient(base_url=deployed.http, headers=headers, timeout=30, limits=limits)
    version = await asyncio.to_thread(k8s_version, deployed.http, headers)
    tally, killed, stop = Tally(), [], asyncio.Event()
    watchers = [Watcher(sse=i % 2 == 0) for i in range(WATCHERS)]
    watching = [asyncio.create_task(watch(deployed.http, token, w, stop)) for w in watchers]
    await _until(lambda: all(w.connected for w in watchers), 30, "every watcher connected")
    until = time.monotonic() + seconds
    load = [asyncio.create_task(creator(client, version, until, tally, killed))
            for _ in range(CREATORS)]  # fmt: skip
    load += [asyncio.create_task(reader(client, names, until, tally, killed))
             for _ in range(READERS)]  # fmt: skip
    states = StateLog(deployed.folder / "haproxy.log")
    states.read()  # what came before the load is not this run's
    states.changes.clear()
    following = asyncio.create_task(states.follow())
    await asyncio.sleep(seconds / 2)
    leader = await asyncio.to_thread(deployed.leaders)
    if len(leader) != 1:
        raise RuntimeError(f"expected one leader before the kill, found {len(leader)}")
    before = {id(w): w.connects for w in watchers}
    killed.append(time.monotonic())
    os.killpg(leader[0].process.pid, signal.SIGKILL)
    new_leader = await asyncio.to_thread(deployed.wait_leader)
    elected = time.monotonic() - killed[0]
    await asyncio.gather(*load)
    following.cancel()
    # Every watcher on the killed replica has reconnected (and every other is still on).
    await _until(lambda: all(w.connected for w in watchers), 30, "every watcher back")
    marked_at = time.time()
    started = failed = 0
    for _ in range(MARKERS):
        for verb in ("stop", "start"):
            done, missed = await toggle(client, instances, verb)
            started, failed = started + done * (verb == "start"), failed + missed
            await asyncio.sleep(1.5)  # one simulated step: a stopped instance may start again
    await asyncio.sleep(2)  # the last Start's event reaches every watcher
    stop.set()
    for task in watching:
        task.cancel()
    await asyncio.gather(*watching, return_exceptions=True)
    unreadable = await _unreadable(client, tally.acknowledged)
    await client.aclose()
    expected = started  # each successful Start writes one POD_PREPARED, for every watcher
    got = [sum(kind == PREPARED and at >= marked_at for _, kind, at in w.events) for w in watchers]
    return {
        "seconds": seconds,
        "killed": leader[0].replica.name,
        "balancer_changes": [f"{text} by {at - killed[0]:+.1f} s" for at, text in states.changes],
        "new_leader": new_leader.replica.name,
        "seconds_to_new_leader": elected,
        "creates_acknowledged": len(tally.acknowledged),
        "creates_given_up": len(tally.failed_creates),
        "create_attempts_failed": dict(tally.create_errors),
        "create_errors_last_at_s": max(tally.create_errors_after_kill, default=0.0),
        "reads": tally.reads,
        "read_errors": dict(tally.read_errors),
        "read_errors_last_at_s": max(tally.read_errors_after_kill, default=0.0),
        "acknowledged_unreadable": len(unreadable),
        "watchers": len(watchers),
        "watchers_reconnected": sum(w.connects > before[id(w)] for w in watchers),
        "watch_errors": dict(sum((w.errors for w in watchers), Counter())),
        "marker_changes_failed": failed,
        "marker_events_expected_each": expected,
        "watchers_with_every_marker": sum(g >= expected for g in got),
        "sse_watchers_with_a_gap": sum(_gap(w, watchers) for w in watchers if w.sse),
    }


def _gap(watcher: Watcher, watchers: list[Watcher]) -> bool:
    """Whether an SSE watcher missed an event id another SSE watcher got after its own first."""
    if not watcher.ids:
        return True
    seen = set(watcher.ids)
    others = set().union(*(w.ids for w in watchers if w.sse))
    return any(i not in seen for i in others if i >= watcher.ids[0])


async def _unreadable(client: httpx.AsyncClient, names: list[str]) -> list[str]:
    """The acknowledged creates a read through the load balancer does not find."""
    gate = asyncio.Semaphore(16)

    async def missing(name: str) -> bool:
        async with gate:
            for _ in range(3):
                try:
                    reply = await client.get(f"/api/v1/cluster?name={name}")
                except httpx.HTTPError:
                    continue
                return reply.status_code == 404
            return True

    found = await asyncio.gather(*(missing(n) for n in names))
    return [n for n, lost in zip(names, found, strict=True) if lost]


async def _until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not {what} within {timeout} s")
        await asyncio.sleep(0.05)
