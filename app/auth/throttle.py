"""Login throttling: too many failures for one username or one client address lock it out.

Counts live in this process's memory: a replica throttles what it sees, which bounds guessing
per replica without a database write on every failed attempt.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field


@dataclass
class _Record:
    failures: list[float] = field(default_factory=list)
    locked_until: float = 0.0


@dataclass
class LoginThrottle:
    """After ``max_failures`` failures in ``window_seconds``, a key waits ``lockout_seconds``."""

    max_failures: int = 5
    window_seconds: float = 300.0
    lockout_seconds: float = 60.0
    # Bounded, so a flood of distinct usernames cannot grow memory without limit.
    max_keys: int = 10_000
    _records: OrderedDict[str, _Record] = field(default_factory=OrderedDict)

    def retry_after(self, keys: tuple[str, ...], now: float | None = None) -> float:
        """Seconds until every key may try again; 0 when none is locked."""
        now = time.monotonic() if now is None else now
        waits = [self._records[k].locked_until - now for k in keys if k in self._records]
        return max([0.0, *waits])

    def failed(self, keys: tuple[str, ...], now: float | None = None) -> None:
        """Count one failed attempt against each key, locking those over the limit."""
        now = time.monotonic() if now is None else now
        for key in keys:
            record = self._records.pop(key, None) or _Record()
            record.failures = [t for t in record.failures if now - t < self.window_seconds]
            record.failures.append(now)
            if len(record.failures) >= self.max_failures:
                record.locked_until = now + self.lockout_seconds
                record.failures.clear()
            self._records[key] = record
            while len(self._records) > self.max_keys:
                self._records.popitem(last=False)

    def succeeded(self, keys: tuple[str, ...]) -> None:
        """Forget the failures of keys that just logged in."""
        for key in keys:
            self._records.pop(key, None)
