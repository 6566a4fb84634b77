"""The benchmark reports what its load generators delivered, not only how fast: errors and
missing deliveries show in the results and fail the "no case had an error" target; rows whose
ratio is a target are measured in turns, each counted over all its requests."""

from __future__ import annotations

import gc
import os
from collections import Counter
from typing import Any

from tests.bench import cases, procs, report, wrk
from tests.bench.cases import sse

WRK_SUMMARY = """\
Running 1s test @ http://127.0.0.1:8080/api/v1/version
  1 threads and 64 connections
  9530 requests in 1.00s, 1.52MB read
  Socket errors: connect 0, read 3, write 0, timeout 2
  Non-2xx or 3xx responses: 12
Requests/sec:   9519.53
Transfer/sec:      1.52MB
duration-us 1001100
latency-us 6410:4765,7000:4000,10350:670,52000:95
"""


def _parsed(out: str) -> dict[str, Any]:
    return wrk.summary([wrk.parse_slice(out)])


def _slice(requests: int, seconds: float, latency_us: dict[int, int]) -> wrk.Slice:
    return wrk.Slice(requests, 0, {}, seconds, Counter(latency_us))


def test_wrk_failures_are_counted_as_errors():
    result = _parsed(WRK_SUMMARY)
    assert result["requests"] == 9530
    assert result["ok"] == 9530 - 12
    assert result["socket_errors"] == {"connect": 0, "read": 3, "write": 0, "timeout": 2}
    assert result["errors"] == 12 + 3 + 2
    assert result["rps"] == 9530 / 1.0011
    assert (result["p50_ms"], result["p99_ms"]) == (6.41, 10.35)


def test_a_row_measured_in_turns_counts_all_its_requests_and_their_percentiles():
    quick = _slice(9_900, 1.0, {5_000: 9_900})
    stalled = _slice(100, 1.0, {200_000: 100})  # a second in which the machine stalled
    result = wrk.summary([quick, stalled])
    assert (result["requests"], result["rps"], result["slices"]) == (10_000, 5_000, 2)
    # Those 100 are 1 % of the row's requests, not the p99 of a turn of their own.
    assert (result["p50_ms"], result["p99_ms"]) == (5.0, 5.0)
    result = wrk.summary([quick, _slice(101, 1.0, {200_000: 101})])
    assert result["p99_ms"] == 200.0


def test_an_sse_subscriber_missing_an_event_is_delivered_less_than_expected():
    starts = {"pod-a": [100.0, 110.0]}
    arrivals = [
        [["pod-a", sse.PREPARED, 100.02, 7], ["pod-a", sse.PREPARED, 110.03, 9]],  # got both
        [["pod-a", sse.PREPARED, 100.05, 7]],  # missed the second Start's event
    ]
    result = sse.summarise(
        {"ttfb_s": [0.01, 0.02], "refused": [], "arrivals": arrivals},
        starts,
        made=5,
        failures={"stop: 412 instance is STOPPING": 1},
        waits=2,
        window=(99.0, 101.0),
    )
    assert (result["expected"], result["delivered"]) == (4, 3)
    assert "1 x stop: 412 instance is STOPPING" in sse.describe(result)  # says why it failed
    # Turns that sent no Start (no instance had stopped yet) are shown, and are no error.
    assert "2 Start turns waited for a Stop to complete" in sse.describe(result)
    assert result["changes_per_second"] == 2.5  # the rate reached, not the one asked for
    # The failed change call, the missing delivery, and the subscriber that missed an event.
    assert result["errors"] == 1 + 1 + 1
    assert (result["subscribers_missing_events"], result["events_checked_each"]) == (1, 2)


def test_events_outside_the_changes_or_in_another_order_are_not_counted_missed():
    starts = {"pod-a": [1.5], "pod-b": [2.5]}
    # Log place 3 is older than the first Start's (5); the polling worker got it late.
    exited = ["pod-c", "EVENT_TYPE_POD_EXITED", 1.6, 3]
    writer = [["pod-a", sse.PREPARED, 1.55, 5], ["pod-b", sse.PREPARED, 2.55, 6]]
    poller = [exited, ["pod-b", sse.PREPARED, 2.6, 6], ["pod-a", sse.PREPARED, 2.6, 6]]
    assert sse.missed_events([writer, poller], starts) == (0, 2)
    assert sse.missed_events([writer, poller[:2]], starts) == (1, 2)
    # After the last Start's place: still on its way to some subscribers when they stopped.
    after = ["pod-a", "EVENT_TYPE_POD_EXITED", 4.0, 8]
    assert sse.missed_events([[*writer, after], poller], starts) == (0, 2)


def test_a_case_with_errors_misses_the_target_and_shows_them():
    failures = WRK_SUMMARY.splitlines(keepends=True)[3:5]  # the socket errors and non-2xx
    clean = _parsed(WRK_SUMMARY.replace("".join(failures), ""))
    run = {"a_version": clean, "b_read": _parsed(WRK_SUMMARY)}
    report.derive(run, workers=1)
    assert run["targets"]["no case had an error"] is False
    results = {"runs": {1: run}}
    labels = {"a_version": "(a)", "b_read": "(b)"}
    assert "**17** (12 non-2xx, 3 read, 2 timeout)" in report.table(results, labels, {})
    run["b_read"] = clean
    report.derive(run, workers=1)
    assert run["targets"]["no case had an error"] is True


def test_rows_compared_by_a_ratio_are_measured_in_turns_after_a_warm_up(monkeypatch):
    measured: list[str] = []

    def measure(url, seconds, token, cpus, script="", connections=wrk.CONNECTIONS):
        measured.append(url)
        return _slice(100 if len(measured) > 2 else 1, seconds, {1_000: 1})

    monkeypatch.setattr(wrk, "measure", measure)
    monkeypatch.setattr(cases, "settle", lambda base: None)
    bench = cases.Bench(processes=None, workers=1, seconds=3, server=None)  # type: ignore[arg-type]
    targets = {"one": cases.Target("http://a", "/x"), "two": cases.Target("http://b", "/x")}
    result = bench.compare(targets)
    assert measured == ["http://a/x", "http://b/x"] * 4  # a warm-up turn, then three
    assert result["one"]["requests"] == result["two"]["requests"] == 300  # not the warm-ups
    assert result["one"]["slices"] == 3


def test_load_generated_in_the_benchmark_process_runs_apart_from_the_server():
    # The reader of the backlog case times its requests from when they were due: a full
    # collection of this process's heap (the whole app is imported) would be timed as server.
    assert gc.get_freeze_count() == 0
    cores = os.sched_getaffinity(0)
    with procs.frozen_heap(), procs.pinned(str(min(cores))):
        assert gc.get_freeze_count() > 10_000
        assert os.sched_getaffinity(0) == {min(cores)}
    assert gc.get_freeze_count() == 0
    assert os.sched_getaffinity(0) == cores
