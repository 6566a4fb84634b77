"""The store and the gate over it, as ``serve`` and ``proxy`` open them: the first admin, the
signing secret's note, a database that cannot be used said in one line; and the authenticate
hook both transports call."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy.engine import make_url

from app.assembly.database_wait import open_store
from app.auth.gate import Gate
from app.auth.oidc import ProviderConfig, ProviderTokens
from app.auth.passwords import PasswordHasher
from app.auth.policy import Policy
from app.auth.rate_limit import limiter_for
from app.auth.tokens import TokenIssuer, load_secret
from app.calls.callers import Caller
from app.calls.refusals import Rejected
from app.gateway.errors import GatewayError
from app.gateway.options import Peer
from app.gateway.registry import Method
from app.observe.calls import note_user
from app.settings.config import ConfigurationError, Settings
from app.store import AlreadyExists, ObjectStore, Unavailable, make_private_folder

log = logging.getLogger("portico")

BOOTSTRAP_ADMIN = "admin"


async def open_gate(
    settings: Settings, policy: Policy, **store_options: Any
) -> tuple[ObjectStore, Gate]:
    """The store with a first admin in it, and the gate over its accounts and tokens that
    admits calls as ``policy`` says."""
    make_private_folder(settings.data_dir)
    issuer = TokenIssuer(
        load_secret(settings.jwt_secret, settings.data_dir),
        ttl_seconds=settings.token_ttl_seconds,
    )
    with _database_refusal(settings):
        store = await open_store(settings, **store_options)
    try:
        hasher = PasswordHasher(cost=settings.password_hash_cost)
        with _database_refusal(settings):
            await bootstrap_admin(store, hasher, settings.admin_password)
            await note_signing_secret(store, issuer)
    except BaseException:
        await store.close()
        raise
    limiter = limiter_for(store.rate_buckets, *settings.rate_limits())
    provider_config = ProviderConfig.from_settings(settings)
    provider = None if provider_config is None else ProviderTokens(provider_config)
    if provider is not None:
        provider.keys.start()
    return store, Gate(
        store,
        issuer,
        hasher,
        trusted_proxies=settings.trusted_proxies,
        limiter=limiter,
        policy=policy,
        provider=provider,
    )


@contextlib.contextmanager
def _database_refusal(settings: Settings) -> Iterator[None]:
    """A database that cannot be used at start (not running, a wrong password or name, a
    folder it cannot write) stops the start with one line naming the setting and what the
    driver said, not a chain of tracebacks ending in "retry shortly"."""
    try:
        yield
    except Unavailable as exc:
        variable = "PORTICO_DATABASE_URL" if settings.database_url else "PORTICO_DATA_DIR"
        url = make_url(settings.effective_database_url).render_as_string(hide_password=True)
        said = (exc.detail or str(exc)).strip().splitlines()[0][:300]
        raise ConfigurationError(f"{variable}: cannot use the database {url}: {said}") from exc


# The store's note of the secret the last process started on it signs tokens with.
SIGNING_SECRET = "signing_secret_fingerprint"


async def note_signing_secret(store: ObjectStore, issuer: TokenIssuer) -> None:
    """Say at start when the process started on this store before signed with another secret:
    replicas on one PostgreSQL refuse each other's tokens unless they share PORTICO_JWT_SECRET
    (one without it generates its own, in its own data folder), and nothing else tells."""
    mine = issuer.fingerprint()
    async with store.transaction() as tx:
        known = await tx.counter(SIGNING_SECRET)
        if known != mine:
            await tx.set_counter(SIGNING_SECRET, mine)
    if known is not None and known != mine:
        log.warning(
            "PORTICO_JWT_SECRET differs from the secret of the last server started on this "
            "database: tokens one issues are refused by the other. Give every replica the "
            "same PORTICO_JWT_SECRET (after changing it on purpose, restart every one)"
        )


async def admit_caller(
    gate: Gate, method: Method, metadata: Iterable[tuple[str, str | bytes]], peer: Peer
) -> object:
    """The gate's verdict on a call, a refusal raised as the transports render it (with its
    details: a rate limit's RetryInfo is HTTP's Retry-After)."""
    try:
        caller = await gate.admit(method.full_name, metadata, peer)
    except Rejected as rejected:
        headers = [("www-authenticate", rejected.challenge)] if rejected.challenge else []
        details = rejected.status_proto().details
        raise GatewayError(rejected.code, rejected.message, details, headers=headers) from None
    if isinstance(caller, Caller):
        note_user(caller.username, caller.issuer)
    return caller


async def bootstrap_admin(store: ObjectStore, hasher: PasswordHasher, password: str) -> None:
    """On first start (no accounts at all), create ``admin``; never with a built-in password."""
    if await store.accounts.list():
        if password:
            # Said at every start: an operator who set it expects it to work, and it does not.
            log.warning(
                "PORTICO_ADMIN_PASSWORD is ignored: accounts exist already (it only sets the "
                "first admin's password); change a password with "
                "`portico users set-password %s`",
                BOOTSTRAP_ADMIN,
            )
        return
    generated = not password
    password = password or secrets.token_urlsafe(18)
    password_hash = await asyncio.to_thread(hasher.hash, password)
    try:
        await store.accounts.create(BOOTSTRAP_ADMIN, password_hash, "admin")
    except AlreadyExists:  # another worker of this server got there first
        return
    if generated:
        # Printed once, to the console only: it is never stored or logged anywhere else.
        print(
            f"\nCreated account {BOOTSTRAP_ADMIN!r} with password {password}\n"
            "Keep it now: it will not be shown again.\n",
            flush=True,
        )
