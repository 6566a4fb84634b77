"""The gate every call passes: login, logout, token checks and per-call authentication.

Verified tokens are cached (bounded, until they expire), because verifying a JWT costs far more
than the rest of a small call. A cached entry is trusted for ``recheck_seconds`` at most; then the
revocation list and the account are read again, so a Logout, a disabled account, a changed role
or a changed password (the token's password stamp no longer the account's) takes effect at once
in this process and within that time in every other replica.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

import grpc
from prometheus_client import Counter

from app.auth import field_rules
from app.auth.client_address import client_address, throttle_address, trusted_networks
from app.auth.oidc import ProviderTokens, unverified_header
from app.auth.passwords import PasswordHasher
from app.auth.policy import Access, Policy, split
from app.auth.rate_limit import RateLimited, RateLimiter
from app.auth.throttle import LoginThrottle, Throttled
from app.auth.tokens import ALGORITHM, Claims, InvalidToken, TokenIssuer
from app.calls.callers import Caller, current_caller
from app.calls.refusals import Rejected, Violations
from app.calls.shared_calls import SharedCalls
from app.observe.metrics import LOCKOUTS, LOGINS, RATE_LIMITED, RECORDING, TOKEN_REFUSALS
from app.store import Account, ObjectStore

# Logins, failed logins, lockouts and account changes: one line each, for the operator.
audit = logging.getLogger("portico.audit")

USERNAME = re.compile(field_rules.USERNAME.pattern or "")
# Whom a rate limit bucket counts: a signed-in account, or an anonymous client's address.
ACCOUNT = "account:"
ADDRESS = "address:"
BAD_CREDENTIALS = "invalid username or password"


@dataclass
class _Verified:
    caller: Caller
    checked_at: float
    # What the token says of the password it was issued under (see _password_unchanged).
    password_stamp: str
    issued_at: int


class Gate:
    """Issues tokens at login and admits each call whose token and role allow it."""

    def __init__(
        self,
        store: ObjectStore,
        issuer: TokenIssuer,
        hasher: PasswordHasher,
        throttle: LoginThrottle | None = None,
        *,
        trusted_proxies: Iterable[str] = (),
        cache_size: int = 10_000,
        recheck_seconds: float = 1.0,
        limiter: RateLimiter | None = None,
        policy: Policy | None = None,
        provider: ProviderTokens | None = None,
    ) -> None:
        self.store = store
        # An OpenID provider whose tokens are admitted beside Portico's own (None: none).
        self.provider = provider
        # Who may call what: the APIs' own rules (without any, the name rule alone).
        self.policy = policy or Policy()
        # Per-caller rate limits (None: none): every admitted call takes a token.
        self.limiter = limiter
        self.issuer = issuer
        self.hasher = hasher
        self.throttle = throttle or LoginThrottle(store.login_attempts)
        self.trusted_proxies = trusted_networks(trusted_proxies)
        self.cache_size = cache_size
        self.recheck_seconds = recheck_seconds
        self._cache: OrderedDict[str, _Verified] = OrderedDict()
        # Every call with a token arrives at once when its cache entry is due: one database
        # check answers them all.
        self._checks: SharedCalls[Caller] = SharedCalls()

    async def login(
        self, username: str, password: str, client: str, request_id: str = ""
    ) -> tuple[str, Claims]:
        """A fresh token for valid credentials; Rejected otherwise (same answer for any miss)."""
        # The request's field rules, every one checked before any is reported (the servicer's
        # checks apply them too; this keeps the gate safe for any other caller).
        found = Violations()
        for name, rule, value in (
            ("username", field_rules.USERNAME, username),
            ("password", field_rules.PASSWORD, password),
        ):
            problem = rule.problem(value) if value else "is required"
            if problem:
                found.add(name, problem)
        if found:
            raise Rejected.invalid(found)
        keys = self.throttle.keys(username, client)
        try:
            await self.throttle.reserve(keys)
        except Throttled as throttled:
            wait = throttled.refusal.retry_after
            _count(LOGINS, "throttled")
            audit.warning(
                "login refused while locked out: user=%s address=%s request_id=%s",
                username,
                client,
                request_id,
            )
            raise Rejected(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"too many failed logins; try again in {int(wait) + 1} s",
                retry_after=wait,
            ) from None
        seen = f"user={username} address={client} request_id={request_id}"
        try:
            account = await self.store.accounts.get(username)
            # Hash checks run in a thread: they are slow by design and must not stall the loop.
            if account is None or not account.enabled:
                await asyncio.to_thread(self.hasher.burn, password)
                ok = False
            else:
                ok = await asyncio.to_thread(self.hasher.verify, password, account.password_hash)
        except BaseException:
            self.throttle.release(keys)  # the reserved attempt stays counted as a failure
            raise
        lockouts = await self.throttle.settle(keys, ok)
        if account is not None and not account.enabled:
            audit.warning("login refused, account disabled: %s", seen)
        elif not ok:
            reason = "no such account" if account is None else "wrong password"
            audit.warning("login failed (%s): %s", reason, seen)
        for lockout in lockouts:
            if RECORDING.on:
                LOCKOUTS.inc()
            audit.warning(
                "login lockout of %s for %d s after repeated failures: %s",
                lockout.key,
                lockout.retry_after,
                seen,
            )
        if not ok or account is None:
            _count(LOGINS, "failure")
            raise Rejected(grpc.StatusCode.UNAUTHENTICATED, BAD_CREDENTIALS)
        _count(LOGINS, "success")
        audit.info("login: %s role=%s", seen, account.role)
        return self.issuer.issue(
            account_id=str(account.id),
            username=account.username,
            role=account.role,
            # The hash the password was checked against: if it changed meanwhile, this token
            # is refused at its first check, as the tokens issued before the change are.
            password_stamp=self.issuer.password_stamp(account.password_hash),
            developer=account.developer,
            operator=account.operator,
        )

    def client_address(self, peer: str, metadata: Iterable[tuple[str, str | bytes]]) -> str:
        """The caller's address: the peer's, or the forwarded one from a trusted proxy."""
        return client_address(peer, metadata, self.trusted_proxies)

    async def logout(self, caller: Caller) -> None:
        """Revoke the caller's token everywhere until it would have expired anyway."""
        self._cache = OrderedDict(
            (t, v) for t, v in self._cache.items() if v.caller.token_id != caller.token_id
        )
        await self.store.revocations.revoke(
            caller.token_id, datetime.fromtimestamp(caller.expires_at, UTC)
        )

    async def verify(self, token: str) -> Caller:
        """The caller a token stands for; InvalidToken unless it is current, unrevoked and its
        account enabled."""
        return self._recently_verified(token) or await self._verify(token)

    def _recently_verified(self, token: str) -> Caller | None:
        """The caller of a token checked less than ``recheck_seconds`` ago and not expired.

        Synchronous, so the common case costs no coroutine.
        """
        cached = self._cache.get(token)
        if (
            cached is None
            or time.monotonic() - cached.checked_at >= self.recheck_seconds
            or time.time() >= cached.caller.expires_at
        ):
            return None
        self._cache.move_to_end(token)
        return cached.caller

    async def _verify(self, token: str) -> Caller:
        return await self._checks.run(token, functools.partial(self._check_token, token))

    async def _check_token(self, token: str) -> Caller:
        now = time.monotonic()
        cached = self._cache.get(token)
        if cached is not None and time.time() < cached.caller.expires_at:
            caller, stamp, issued_at = cached.caller, cached.password_stamp, cached.issued_at
        else:
            caller, stamp, issued_at = await self._verify_signed(token)
        if caller.issuer:
            # The provider vouches for its callers: only a Logout since can refuse one here.
            if await self.store.revocations.is_revoked(caller.token_id):
                raise InvalidToken("token was revoked", "revoked")
            self._remember(token, _Verified(caller, now, stamp, issued_at))
            return caller
        account = await self._check_still_valid(caller)
        if not self._password_unchanged(account, stamp, issued_at):
            raise InvalidToken(
                "token was issued before the account's password changed", "password_changed"
            )
        caller = dataclasses.replace(caller, developer=account.developer, operator=account.operator)
        self._remember(token, _Verified(caller, now, stamp, issued_at))
        return caller

    async def _verify_signed(self, token: str) -> tuple[Caller, str, int]:
        """The caller a token's signature and claims vouch for, its password stamp and when it
        was issued: Portico's own HS256 token, or the identity provider's."""
        provider = self.provider
        if provider is not None:
            header = unverified_header(token)
            if header.get("alg") != ALGORITHM:
                return await provider.verify(token, header), "", 0
        claims = self.issuer.verify(token)
        caller = Caller(
            claims.subject, claims.name, claims.role, claims.token_id, claims.expires_at
        )
        return caller, claims.password_stamp, claims.issued_at

    def _remember(self, token: str, verified: _Verified) -> None:
        self._cache[token] = verified
        self._cache.move_to_end(token)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    async def _check_still_valid(self, caller: Caller) -> Account:
        if await self.store.revocations.is_revoked(caller.token_id):
            raise InvalidToken("token was revoked", "revoked")
        try:
            account_id = int(caller.account_id)
        except ValueError as exc:
            raise InvalidToken("token subject is not an account", "account") from exc
        account = await self.store.accounts.get_by_id(account_id)
        if account is None or not account.enabled or account.username != caller.username:
            raise InvalidToken("token account is disabled or gone", "account")
        if account.role != caller.role:
            # A changed role must not keep the powers of the old one.
            raise InvalidToken("token role is no longer the account's role", "role_changed")
        return account

    def _password_unchanged(self, account: Account, stamp: str, issued_at: int) -> bool:
        """Whether the account's password is the one a token was issued under: whoever held
        an old password must not keep its sessions."""
        if stamp:
            return self.issuer.stamp_matches(stamp, account.password_hash)
        # A token of an earlier version, which put no stamp in its tokens, is kept until it
        # expires only while the account is as it was (any change since refuses it), so an
        # upgrade signs nobody out.
        return issued_at >= account.updated_at.timestamp()

    async def check(self, token: str) -> bool:
        """Whether ``token`` would be admitted now; never raises for a bad token."""
        try:
            await self.verify(token)
        except InvalidToken:
            return False
        return True

    def admitted_now(
        self, full_method: str, metadata: Iterable[tuple[str, str | bytes]]
    ) -> Caller | None:
        """The caller :meth:`admit` would admit, when that needs no wait: a token verified
        recently whose role may call ``full_method`` (:data:`current_caller` is set then). None
        when only :meth:`admit` can tell; most calls are decided here, without its coroutine."""
        token = bearer_token(metadata)
        caller = self._recently_verified(token) if token else None
        if caller is None or not self.policy.allows(caller.role, full_method):
            return None
        limiter = self.limiter
        if limiter is not None and not limiter.take_here(full_method, ACCOUNT + caller.account_id):
            return None
        current_caller.set(caller)
        return caller

    async def admit(
        self,
        full_method: str,
        metadata: Iterable[tuple[str, str | bytes]],
        peer: Callable[[], str] = str,
    ) -> Caller | None:
        """Authenticate and authorize one call, and take a token from its caller's rate limit
        (``peer`` names the connection's peer, for anonymous callers); sets
        :data:`current_caller` for the servicer."""
        access = self.policy.access(full_method)
        token = bearer_token(metadata)
        if access is Access.PUBLIC and not token:
            await self._limit(full_method, self._anonymous(metadata, peer))
            current_caller.set(None)
            return None
        if not token:
            _count(TOKEN_REFUSALS, "missing")
            raise Rejected(grpc.StatusCode.UNAUTHENTICATED, "missing bearer token")
        try:
            caller = self._recently_verified(token) or await self._verify(token)
        except InvalidToken as exc:
            if access is Access.PUBLIC:
                await self._limit(full_method, self._anonymous(metadata, peer))
                current_caller.set(None)
                return None
            _count(TOKEN_REFUSALS, exc.reason)
            raise Rejected(
                grpc.StatusCode.UNAUTHENTICATED,
                str(exc),
                challenge='Bearer error="invalid_token"',
            ) from exc
        if not self.policy.allows(caller.role, full_method):
            _count(TOKEN_REFUSALS, "permission_denied")
            raise Rejected(
                grpc.StatusCode.PERMISSION_DENIED,
                f"role {caller.role!r} may not call {split(full_method)[1]}",
            )
        await self._limit(full_method, ACCOUNT + caller.account_id)
        current_caller.set(caller)
        return caller

    def _anonymous(
        self, metadata: Iterable[tuple[str, str | bytes]], peer: Callable[[], str]
    ) -> str:
        """Whom an anonymous call counts as: its client's address (an IPv6 client's /64)."""
        if self.limiter is None:
            return ""
        return ADDRESS + throttle_address(self.client_address(peer(), metadata))

    async def _limit(self, full_method: str, who: str) -> None:
        """Take a token for the call; RESOURCE_EXHAUSTED with the delay when over the limit."""
        if self.limiter is None:
            return
        try:
            await self.limiter.take(full_method, who)
        except RateLimited as limited:
            if RECORDING.on:
                RATE_LIMITED.labels(full_method, who.partition(":")[0]).inc()
            raise Rejected(
                grpc.StatusCode.RESOURCE_EXHAUSTED, str(limited), retry_after=limited.retry_after
            ) from None


def _count(counter: Counter, label: str) -> None:
    if RECORDING.on:
        counter.labels(label).inc()


def bearer_token(metadata: Iterable[tuple[str, str | bytes]]) -> str:
    """The token of an ``authorization: Bearer <token>`` entry, or ``""``."""
    for key, value in metadata:
        if key.lower() == "authorization" and isinstance(value, str):
            scheme, _, token = value.partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
    return ""
