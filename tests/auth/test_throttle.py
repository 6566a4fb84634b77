"""Repeated login failures lock a username or client out for a while."""

from __future__ import annotations

from app.auth.throttle import LoginThrottle


def test_lockout_after_repeated_failures_then_release():
    throttle = LoginThrottle(max_failures=3, window_seconds=60, lockout_seconds=30)
    keys = ("user:alice", "client:10.0.0.1")
    for t in range(2):
        throttle.failed(keys, now=t)
    assert throttle.retry_after(keys, now=2) == 0
    throttle.failed(keys, now=2)
    assert throttle.retry_after(keys, now=3) == 29
    assert throttle.retry_after(("user:alice",), now=33) == 0


def test_failures_outside_the_window_do_not_count():
    throttle = LoginThrottle(max_failures=3, window_seconds=10, lockout_seconds=30)
    for t in (0, 20, 40):
        throttle.failed(("user:bob",), now=t)
    assert throttle.retry_after(("user:bob",), now=41) == 0


def test_one_client_guessing_many_usernames_is_locked_by_address():
    throttle = LoginThrottle(max_failures=3, window_seconds=60, lockout_seconds=30)
    for i, name in enumerate(["a", "b", "c"]):
        throttle.failed((f"user:{name}", "client:10.0.0.9"), now=i)
    assert throttle.retry_after(("user:d", "client:10.0.0.9"), now=3) > 0
    assert throttle.retry_after(("user:d", "client:10.0.0.8"), now=3) == 0


def test_success_clears_the_record_and_memory_stays_bounded():
    throttle = LoginThrottle(max_failures=2, max_keys=100)
    throttle.failed(("user:x",), now=0)
    throttle.succeeded(("user:x",))
    throttle.failed(("user:x",), now=1)
    assert throttle.retry_after(("user:x",), now=1) == 0
    for i in range(1000):
        throttle.failed((f"user:{i}",), now=2)
    assert len(throttle._records) == 100
