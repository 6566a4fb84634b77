"""How this process's background loops are doing, for ``/readyz``: which run, which wait for
the leadership, and which are not running (failed and about to restart, or stopped) and why.

A loop is a supervised job (:func:`app.server.jobs.supervised`): the leader's (reconcilers, the
simulation, compaction, the sweeps of expired records) or every replica's (its heartbeat, its
metrics). The leader election is reported beside them: while it cannot reach the database no
process leads, and the leader's loops wait for it here as everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.store import LeaderElection

RUNNING = "running"
RESTARTING = "restarting"  # failed (or returned); started again after the restart delay
STANDBY = "standby"  # a leader's loop in a process that is not the leader
STOPPED = "stopped"  # the server is stopping, or the loop's task ended


@dataclass
class LoopState:
    """One background loop: what it is doing since when, how often it failed, and why last."""

    name: str
    on_leader: bool
    state: str = STOPPED
    since: float = field(default_factory=time.monotonic)
    failures: int = 0
    last_error: str = ""

    def becomes(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.since = time.monotonic()

    def failed(self, error: str) -> None:
        self.failures += 1
        self.last_error = error
        self.becomes(RESTARTING)

    @property
    def running(self) -> bool:
        """Whether it runs, or waits for the leadership as it should in a follower."""
        return self.state in (RUNNING, STANDBY)

    def why_not(self) -> str:
        """What /readyz says of a loop that is not running."""
        if self.state == RESTARTING:
            reason = self.last_error or "it returned"
            return f"restarting after a failure ({reason}; {self.failures} so far)"
        return self.state

    def report(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "state": self.state,
            "on": "leader" if self.on_leader else "every replica",
            "for_seconds": round(time.monotonic() - self.since, 1),
        }
        if self.failures:
            shown |= {"failures": self.failures, "last_error": self.last_error}
        return shown


def loop_name(job: Callable[..., object]) -> str:
    """A job's name as reported: its function's (``compact_event_log``), or its class's for a
    bound ``run`` (``ClusterReconciler``)."""
    qualified = str(getattr(job, "__qualname__", "") or repr(job))
    return qualified.rpartition("<locals>.")[2].removesuffix(".run")


class BackgroundWork:
    """Every background loop of this process, and the leader election they depend on."""

    def __init__(self) -> None:
        self.loops: dict[str, LoopState] = {}
        self.election: LeaderElection | None = None
        self.campaigning: Callable[[], bool] = lambda: False  # whether the election still runs

    def add(self, job: Callable[..., object], *, on_leader: bool) -> LoopState:
        """The state of a new loop running ``job`` (two of one name are told apart)."""
        name = base = loop_name(job)
        number = 1
        while name in self.loops:
            number += 1
            name = f"{base}#{number}"
        state = self.loops[name] = LoopState(name, on_leader, STANDBY if on_leader else STOPPED)
        return state

    def leadership(self) -> tuple[bool, str]:
        """Whether this process leads, and why the election is not running ("" if it is)."""
        election = self.election
        if election is None:
            return False, "not started"
        if not self.campaigning():
            return False, "stopped"
        if election.trouble:
            return False, f"cannot reach the database ({election.trouble})"
        return election.is_leader, ""

    def not_running(self) -> dict[str, str]:
        """The loops (and the election) that should run here and do not, each with why."""
        found = {name: loop.why_not() for name, loop in self.loops.items() if not loop.running}
        leader, trouble = self.leadership()
        if trouble:
            found["leader_election"] = trouble
        elif leader:
            # Elected, so every leader's loop should be running: one still on standby is not.
            found |= {
                name: "not started although this process leads"
                for name, loop in self.loops.items()
                if loop.on_leader and loop.state == STANDBY
            }
        return found

    def report(self) -> dict[str, Any]:
        """Every loop's state, for ``/readyz?verbose``."""
        leader, trouble = self.leadership()
        election = {"state": "not running", "why": trouble} if trouble else {"state": RUNNING}
        return {
            "leader": leader,
            "leader_election": election,
            "loops": {name: loop.report() for name, loop in sorted(self.loops.items())},
        }
