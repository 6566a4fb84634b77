"""Per-caller rate limits: a token bucket per signed-in account (per client address for
anonymous calls), one limit across every worker and replica.

The bucket itself lives in the store (``app/store/rate_buckets.py``), so every process takes
from the same one. A call must not cost a database write, so each process takes a *share* of
a caller's tokens at a time, a tenth of a second of the rate (at most the burst), and spends it
locally: calls are admitted synchronously, from this process's share, and the next share is
taken in the background when this one runs low (a quarter left), so a steady caller never
waits for the store, and the store is written once per share, however slowly the caller spends
it. Only a call that finds no share waits (the calls arriving meanwhile wait for the same
take). What is left of a share when the next comes joins it, up to one share, so a process
holds at most two; what it holds for a caller who leaves it alone for a second is dropped,
never returned (a caller who comes back later finds the bucket, no more). A refusal is
remembered until the bucket holds a token again, so a caller over the limit costs no write
either. A share of one token (a rate under 10 a second) is taken only when a call needs it:
such a limit is exact.

Precision: the store never hands out more than the bucket allows, so across all processes a
caller gets at most ``burst + rate x T`` calls in any T seconds, plus what the processes held
of its shares when those T seconds began (at most two shares, a fifth of a second's rate, each).
The other way, tokens in one process's share are not available in another: a caller whose calls
are spread over P processes may be refused up to P shares early, and dropped shares are lost to
it.

A method with its own limit (``PORTICO_RATE_LIMIT_METHODS``) has a bucket of its own per
caller, instead of the caller's common one; a rate of 0 there leaves it unlimited.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from app.calls.shared_calls import SharedCalls
from app.observe.repeats import Repeats
from app.store import StoreError
from app.store.rate_buckets import RateBuckets

log = logging.getLogger("portico.auth")
# While the database is away every share's renewal fails: a line per interval says so.
_failed_renewals = Repeats(log)

# A share is this long of the rate (at least one token, at most the burst)...
SHARE_SECONDS = 0.1
# ...and what a process holds of a bucket is dropped when no call took from it for this long:
# tokens left unused must not let a caller who comes back later exceed the limit. (Counted from
# the last call, not from the take: a share that expired while its caller kept calling would
# cost a store write a second for every caller, whatever its pace.)
IDLE_SECONDS = 1.0


@dataclass(frozen=True)
class Limit:
    """``rate`` calls a second, ``burst`` at once; a rate of 0 is no limit."""

    rate: float
    burst: int

    @property
    def share(self) -> int:
        """How many tokens a process takes from the store at a time."""
        return max(1, min(self.burst, math.ceil(self.rate * SHARE_SECONDS)))

    def describe(self) -> str:
        return f"{self.rate:g} calls a second (bursts of {self.burst})"


class RateLimited(Exception):
    """The caller is over the limit; it may call again in ``retry_after`` seconds."""

    def __init__(self, limit: Limit, retry_after: float) -> None:
        super().__init__(
            f"rate limit of {limit.describe()} exceeded; try again in {math.ceil(retry_after)} s"
        )
        self.retry_after = retry_after


class _Share:
    """What this process holds of one bucket."""

    __slots__ = ("expires", "limit", "low", "refused_until", "tokens")

    def __init__(self, limit: Limit) -> None:
        self.limit = limit
        self.tokens = 0
        self.expires = 0.0  # dropped when no call comes before then
        self.refused_until = 0.0
        size = limit.share
        # The next share is taken when a call leaves this many tokens. A share of one token is
        # taken when a call needs it, never ahead (no call leaves -1).
        self.low = size // 4 if size > 1 else -1


class RateLimiter:
    """Admits calls within their caller's limit; one per process, over the shared store."""

    def __init__(
        self,
        buckets: RateBuckets,
        default: Limit | None,
        methods: Mapping[str, Limit] | None = None,
        *,
        max_local_keys: int = 10_000,
    ) -> None:
        self.buckets = buckets
        self.default = default
        self.max_local_keys = max_local_keys
        # By full method name: the limit and the suffix that gives the method its own buckets.
        self._methods = {
            name: (None if limit.rate == 0 else limit, f" {name}")
            for name, limit in (methods or {}).items()
        }
        self._shares: OrderedDict[str, _Share] = OrderedDict()
        self._takes: SharedCalls[None] = SharedCalls()
        self._renewals: set[asyncio.Task[None]] = set()  # referenced until done

    @property
    def full_after(self) -> float:
        """Seconds after which any bucket left alone is full again."""
        limits = [self.default] + [limit for limit, _ in self._methods.values()]
        return max((lim.burst / lim.rate for lim in limits if lim is not None), default=0.0)

    def bucket(self, full_method: str, who: str) -> tuple[str, Limit] | None:
        """The bucket a call of ``full_method`` by ``who`` takes from, and its limit; None when
        the call is not limited."""
        found = self._methods.get(full_method)
        if found is None:
            return None if self.default is None else (who, self.default)
        limit, suffix = found
        return None if limit is None else (who + suffix, limit)

    def take_here(self, full_method: str, who: str) -> bool:
        """Take a token from this process's share, synchronously; False when only
        :meth:`take` can tell (no share, an empty one, or a refusal)."""
        # Every admitted call passes here: the common case (no per-method limits) is one
        # dictionary lookup and a decrement, inline (a frame for _take_local cost a third more).
        if self._methods:
            found = self.bucket(full_method, who)
            return found is None or self._take_local(found[0])
        if self.default is None:
            return True
        share = self._shares.get(who)
        if share is None or share.tokens <= 0:
            return False
        now = time.monotonic()
        if share.expires <= now:
            return self._take_local(who)  # which drops it
        share.expires = now + IDLE_SECONDS
        share.tokens -= 1
        if share.tokens == share.low:
            self._renew_soon(who, share.limit)
        return True

    async def take(self, full_method: str, who: str) -> str:
        """Take a token for the call, from the store when this process's share is spent;
        RateLimited when the caller is over its limit. Returns the bucket's key ("" when the
        call is not limited)."""
        found = self.bucket(full_method, who)
        if found is None:
            return ""
        key, limit = found
        while not self._take_local(key):
            share = self._shares.get(key)
            wait = 0.0 if share is None else share.refused_until - time.monotonic()
            if wait > 0:
                raise RateLimited(limit, wait)
            await self._takes.run(key, functools.partial(self._refill, key, limit))
        return key

    def _take_local(self, key: str) -> bool:
        share = self._shares.get(key)
        if share is None or share.tokens <= 0:
            return False
        now = time.monotonic()
        if share.expires <= now:  # left alone too long: dropped
            share.tokens = 0
            return False
        share.expires = now + IDLE_SECONDS
        share.tokens -= 1
        if share.tokens == share.low:
            self._renew_soon(key, share.limit)
        return True

    def _renew_soon(self, key: str, limit: Limit) -> None:
        """Take the next share in the background. Once per share (a share's count passes its
        low mark once): a renewal that failed is left to the call that finds the share empty,
        not retried by every call meanwhile."""
        renewal = asyncio.ensure_future(self._renew(key, limit))
        self._renewals.add(renewal)
        renewal.add_done_callback(self._renewals.discard)

    async def _renew(self, key: str, limit: Limit) -> None:
        """Take the next share ahead of need; a failure leaves it to the call that needs it."""
        try:
            await self._takes.run(key, functools.partial(self._refill, key, limit))
        except StoreError as exc:
            _failed_renewals.warning(
                exc.message, "could not renew a rate limit share (%s); the next call will", exc
            )
        except Exception:
            log.warning("could not renew a rate limit share; the next call will", exc_info=True)

    async def _refill(self, key: str, limit: Limit) -> None:
        grant = await self.buckets.take(key, limit.share, limit.rate, limit.burst)
        now = time.monotonic()
        share = self._shares.get(key)
        if share is None:
            share = self._shares[key] = _Share(limit)
            while len(self._shares) > self.max_local_keys:
                self._shares.popitem(last=False)  # its tokens are dropped: never too many
        self._shares.move_to_end(key)
        if grant.tokens:
            # What is left of the last share joins the new one, up to a share: carried whole
            # each time, a steady caller below its share's pace would pile up tokens without
            # end (a burst far over the limit later).
            left = min(share.tokens, limit.share) if share.expires > now else 0
            share.tokens = grant.tokens + left
            share.expires = now + IDLE_SECONDS
        else:
            share.refused_until = now + grant.wait


def limiter_for(
    buckets: RateBuckets,
    default: tuple[float, int] | None,
    methods: Mapping[str, tuple[float, int]],
) -> RateLimiter | None:
    """The limiter the settings ask for (``Settings.rate_limits``); None when nothing is
    limited."""
    if default is None and not any(rate for rate, _ in methods.values()):
        return None
    return RateLimiter(
        buckets,
        None if default is None else Limit(*default),
        {name: Limit(rate, burst) for name, (rate, burst) in methods.items()},
    )
