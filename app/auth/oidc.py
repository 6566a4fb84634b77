"""Tokens of an OpenID Connect provider (Keycloak, Dex, Auth0, Okta, Entra ID ...), admitted
beside Portico's own.

A provider's token is a JWT signed with one of its keys, published as a JWKS at the address its
discovery document (``<issuer>/.well-known/openid-configuration``) names, or at
``PORTICO_OIDC_JWKS_URL``. Verified with PyJWT: python-jose, which signs Portico's own tokens,
verifies neither PS256 nor EdDSA.

Every token costs a bounded amount, whatever it holds: its size is capped before it is parsed, the
algorithm must be one of the asymmetric ones allowed (``none`` and HS* never are: an HMAC
"secret" would be the provider's public key), its key is found by ``kid`` in the cached JWKS.
An unknown ``kid`` fetches the JWKS again, but at most once per refresh interval, and callers
arriving meanwhile share that one fetch, so a flood of random key ids costs nothing. A fetch has a
timeout and a size bound, and runs on the event loop as any other I/O: only the callers whose key
is not known wait for it, and for no longer than the timeout. While the provider cannot be reached
its tokens with known keys still verify (the keys cached stay), others are refused saying so, and
Portico's own tokens are not affected.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
from jwt.exceptions import (
    ExpiredSignatureError,
    ImmatureSignatureError,
    InvalidAudienceError,
    InvalidIssuerError,
    InvalidKeyError,
    MissingRequiredClaimError,
    PyJWKError,
    PyJWTError,
)

from app.auth.tokens import InvalidToken
from app.calls.callers import Caller, Role
from app.calls.shared_calls import SharedCalls
from app.observe.metrics import OIDC_KEY_FETCHES, OIDC_KEYS, OIDC_PROVIDER_UP, RECORDING
from app.settings import limits
from app.settings.config import Settings
from app.settings.identity_rules import check_url, parse_role_map
from app.settings.setting_rules import ConfigurationError

log = logging.getLogger("portico.auth")
audit = logging.getLogger("portico.audit")

DISCOVERY_PATH = "/.well-known/openid-configuration"
# Of several roles granted, the caller acts with the most powerful.
ROLE_ORDER = (Role.ADMIN, Role.OPERATOR, Role.VIEWER, Role.NODE)
# The curve each elliptic-curve algorithm signs with (RFC 7518 §3.4, RFC 8037).
_CURVES = {"ES256": {"P-256"}, "ES384": {"P-384"}, "EdDSA": {"Ed25519", "Ed448"}}
_KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
# RSA keys below this are refused (RFC 7518 §3.3), above this refused too: a huge modulus would
# make each verification slow.
MIN_RSA_BITS = 2048
MAX_RSA_BITS = 8192
_MAX_SUBJECT_CHARS = 255
_REQUIRED = ["exp", "iat", "iss", "aud", "sub"]


class ProviderUnreachable(Exception):
    """The provider's discovery document or keys could not be fetched; says why."""


@dataclass(frozen=True)
class ProviderConfig:
    """The ``PORTICO_OIDC_*`` settings, as the verifier uses them."""

    issuer: str
    audience: str
    jwks_url: str = ""
    roles_claim: str = "roles"
    role_map: dict[str, str] = field(default_factory=dict)
    algorithms: tuple[str, ...] = ("RS256",)
    leeway_seconds: int = 30
    timeout_seconds: float = limits.DEFAULT_JWKS_TIMEOUT_SECONDS
    max_bytes: int = limits.DEFAULT_JWKS_MAX_BYTES
    refresh_seconds: float = limits.DEFAULT_JWKS_REFRESH_SECONDS

    @classmethod
    def from_settings(cls, settings: Settings) -> ProviderConfig | None:
        """The provider the settings name; None without ``PORTICO_OIDC_ISSUER``."""
        if not settings.oidc_issuer:
            return None
        return cls(
            issuer=settings.oidc_issuer,
            audience=settings.oidc_audience,
            jwks_url=settings.oidc_jwks_url,
            roles_claim=settings.oidc_roles_claim,
            role_map=parse_role_map(settings.oidc_role_map),
            algorithms=settings.oidc_algorithms,
            leeway_seconds=settings.oidc_leeway_seconds,
            timeout_seconds=settings.oidc_jwks_timeout_seconds,
            max_bytes=settings.oidc_jwks_max_bytes,
            refresh_seconds=settings.oidc_jwks_refresh_seconds,
        )


async def fetch_json(client: httpx.AsyncClient, url: str, max_bytes: int) -> Any:
    """The JSON document at ``url``, read up to ``max_bytes``; ProviderUnreachable otherwise."""
    try:
        async with client.stream("GET", url, headers={"accept": "application/json"}) as reply:
            if reply.status_code != 200:
                raise ProviderUnreachable(f"{url} answered HTTP {reply.status_code}")
            declared = reply.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise ProviderUnreachable(f"{url} is larger than {max_bytes} bytes")
            body = bytearray()
            async for chunk in reply.aiter_raw():
                body += chunk
                if len(body) > max_bytes:
                    raise ProviderUnreachable(f"{url} is larger than {max_bytes} bytes")
    except httpx.HTTPError as exc:
        raise ProviderUnreachable(f"{url}: {type(exc).__name__} {exc}".strip()) from None
    try:
        return json.loads(body)
    except ValueError:
        raise ProviderUnreachable(f"{url} is not JSON") from None


class ProviderKeys:
    """The provider's signing keys by ``kid``: fetched at start, again when a token names a key
    not among them (at most once per refresh interval), and in the background once old."""

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config
        self.jwks_url = config.jwks_url  # discovered at the first fetch when not configured
        self._keys: dict[str, dict[str, Any]] = {}
        self._prepared: dict[tuple[str, str], jwt.PyJWK] = {}
        self._fetched_at = 0.0  # monotonic time of the last fetch that worked (0: none yet)
        self._attempted_at = -float("inf")
        self.error = ""
        self._fetches: SharedCalls[None] = SharedCalls()
        self._in_flight = False
        self._background: asyncio.Future[None] | None = None

    @property
    def reachable(self) -> bool:
        """Whether the last fetch of the keys worked."""
        return bool(self._fetched_at) and not self.error

    def start(self) -> None:
        """Fetch the keys in the background (a start never waits for the provider)."""
        self._refresh_soon()

    async def key(self, kid: str, algorithm: str) -> jwt.PyJWK:
        """The key ``kid`` prepared for ``algorithm``; InvalidToken when there is none."""
        now = time.monotonic()
        if kid not in self._keys and (
            self._in_flight or now - self._attempted_at >= self.config.refresh_seconds
        ):
            await self.refresh()
        elif self._fetched_at and now - self._fetched_at >= limits.JWKS_MAX_AGE_SECONDS:
            self._refresh_soon()
        data = self._keys.get(kid)
        if data is None:
            if self.error:
                raise InvalidToken(
                    f"the identity provider's keys cannot be fetched now ({self.error})",
                    "provider_unreachable",
                )
            raise InvalidToken("token's key id is not among the identity provider's keys", "key")
        prepared = self._prepared.get((kid, algorithm))
        if prepared is None:
            prepared = self._prepared[(kid, algorithm)] = _prepare(data, algorithm)
        return prepared

    def only_kid(self) -> str:
        """The key id to use for a token without one: the one key published, if only one."""
        if len(self._keys) == 1:
            return next(iter(self._keys))
        raise InvalidToken("token names no key id (kid) and the provider has several keys", "key")

    async def refresh(self) -> None:
        """Fetch the keys now, or join the fetch under way; never raises."""
        await self._fetches.run("jwks", self._fetch)

    def _refresh_soon(self) -> None:
        if self._background is None or self._background.done():
            self._background = asyncio.ensure_future(self.refresh())

    async def _fetch(self) -> None:
        self._attempted_at = time.monotonic()
        self._in_flight = True
        try:
            await self._fetch_once()
        finally:
            self._in_flight = False

    async def _fetch_once(self) -> None:
        config = self.config
        try:
            async with asyncio.timeout(config.timeout_seconds):
                async with httpx.AsyncClient(
                    timeout=config.timeout_seconds, follow_redirects=False, trust_env=False
                ) as client:
                    if not self.jwks_url:
                        self.jwks_url = await self._discover(client)
                    document = await fetch_json(client, self.jwks_url, config.max_bytes)
            keys = _signing_keys(document)
        except TimeoutError:
            self._failed(f"no answer within {config.timeout_seconds:g} s")
        except ProviderUnreachable as exc:
            self._failed(str(exc))
        else:
            if self.error or not self._fetched_at:
                log.info("identity provider %s: %d signing key(s)", config.issuer, len(keys))
            self._keys, self._prepared = keys, {}
            self._fetched_at, self.error = time.monotonic(), ""
            _record("ok", True, len(keys))

    async def _discover(self, client: httpx.AsyncClient) -> str:
        issuer = self.config.issuer
        url = issuer.rstrip("/") + DISCOVERY_PATH
        document = await fetch_json(client, url, limits.MAX_DISCOVERY_BYTES)
        if not isinstance(document, dict) or document.get("issuer") != issuer:
            # OpenID Connect Discovery §4.3: a document of another issuer is not this one's.
            raise ProviderUnreachable(f"{url} does not describe the issuer {issuer}")
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str):
            raise ProviderUnreachable(f"{url} names no jwks_uri")
        try:
            check_url("jwks_uri", jwks_uri)
        except ConfigurationError:
            raise ProviderUnreachable(f"{url} names a jwks_uri that is not https") from None
        return jwks_uri

    def _failed(self, reason: str) -> None:
        if reason != self.error:
            log.warning("identity provider %s: keys not fetched: %s", self.config.issuer, reason)
        self.error = reason
        _record("error", False, len(self._keys))

    def report(self) -> dict[str, object]:
        """How the provider is doing, for ``/readyz`` (never a key or a token)."""
        found: dict[str, object] = {
            "issuer": self.config.issuer,
            "jwks_url": self.jwks_url or "(from discovery)",
            "keys": len(self._keys),
        }
        if self.error:
            found["status"] = "unreachable"
            found["error"] = self.error
        else:
            found["status"] = "ok" if self._fetched_at else "fetching"
        if self._fetched_at:
            found["fetched_seconds_ago"] = round(time.monotonic() - self._fetched_at, 1)
        return found


def _record(outcome: str, up: bool, keys: int) -> None:
    if RECORDING.on:
        OIDC_KEY_FETCHES.labels(outcome).inc()
        OIDC_PROVIDER_UP.set(1 if up else 0)
        OIDC_KEYS.set(keys)


def _signing_keys(document: Any) -> dict[str, dict[str, Any]]:
    """The signing keys of a JWKS by ``kid``, at most :data:`limits.MAX_JWKS_KEYS` of them."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ProviderUnreachable("the JWKS has no keys list")
    found: dict[str, dict[str, Any]] = {}
    for key in document["keys"][: limits.MAX_JWKS_KEYS]:
        if not isinstance(key, dict) or key.get("use", "sig") != "sig":
            continue
        kid = key.get("kid", "")
        if isinstance(kid, str) and len(kid) <= 256 and kid not in found:
            found[kid] = key
    return found


def _prepare(data: dict[str, Any], algorithm: str) -> jwt.PyJWK:
    """The JWK as a key of ``algorithm``; InvalidToken when it is not one (an RSA key for an
    ES256 token, a P-384 key for ES256, an ``alg`` of the key's own that differs)."""
    if data.get("alg", algorithm) != algorithm:
        raise InvalidToken(f"the provider's key is for {data.get('alg')}, not {algorithm}", "key")
    if data.get("kty") != _KEY_TYPES[algorithm[:2]]:
        raise InvalidToken(f"the provider's key is not a key for {algorithm}", "key")
    curves = _CURVES.get(algorithm)
    if curves is not None and data.get("crv") not in curves:
        raise InvalidToken(f"the provider's key is not on the curve of {algorithm}", "key")
    try:
        prepared = jwt.PyJWK(data, algorithm)
    except (PyJWKError, InvalidKeyError, ValueError, TypeError) as exc:
        raise InvalidToken(f"the provider's key cannot be used: {exc}", "key") from None
    size = prepared.key.key_size if data["kty"] == "RSA" else MIN_RSA_BITS
    if not MIN_RSA_BITS <= size <= MAX_RSA_BITS:
        raise InvalidToken(f"the provider's RSA key has {size} bits", "key")
    return prepared


class ProviderTokens:
    """Verifies the provider's tokens; the caller each stands for, with its role."""

    def __init__(self, config: ProviderConfig, keys: ProviderKeys | None = None) -> None:
        self.config = config
        self.keys = keys or ProviderKeys(config)
        self._algorithms = frozenset(config.algorithms)

    async def verify(self, token: str, header: dict[str, Any]) -> Caller:
        """The caller of a token whose (unverified) ``header`` says it is not Portico's own."""
        config = self.config
        if len(token) > limits.MAX_PROVIDER_TOKEN_BYTES:
            raise InvalidToken("token is too large")
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in self._algorithms:
            allowed = ", ".join(config.algorithms)
            raise InvalidToken(
                f"token algorithm {str(algorithm)[:16]!r} is not allowed; allowed: {allowed}",
                "algorithm",
            )
        if "crit" in header:
            raise InvalidToken("token has critical header extensions Portico does not support")
        kid = header.get("kid")
        if kid is None:
            kid = self.keys.only_kid()
        if not isinstance(kid, str):
            raise InvalidToken("token key id (kid) is not a string")
        key = await self.keys.key(kid, algorithm)
        claims = self._claims(token, key, algorithm)
        return self._caller(token, claims)

    def _claims(self, token: str, key: jwt.PyJWK, algorithm: str) -> dict[str, Any]:
        config = self.config
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[algorithm],
                audience=config.audience,
                issuer=config.issuer,
                leeway=config.leeway_seconds,
                options={"require": _REQUIRED},
            )
        except ExpiredSignatureError as exc:
            raise InvalidToken(f"token is not valid: {exc}", "expired") from None
        except ImmatureSignatureError as exc:
            raise InvalidToken(f"token is not valid yet: {exc}", "not_yet_valid") from None
        except InvalidIssuerError:
            raise InvalidToken(
                "token is not valid: its issuer is not the provider's", "issuer"
            ) from None
        except InvalidAudienceError:
            raise InvalidToken(
                f"token is not valid: its audience is not {config.audience!r}", "audience"
            ) from None
        except MissingRequiredClaimError as exc:
            raise InvalidToken(f"token is not valid: {exc}", "invalid") from None
        except PyJWTError as exc:
            raise InvalidToken(f"token is not valid: {exc}", "invalid") from None
        issued = claims.get("iat")
        if not isinstance(issued, int | float) or issued > time.time() + config.leeway_seconds:
            raise InvalidToken("token was issued in the future", "not_yet_valid")
        return claims

    def _caller(self, token: str, claims: dict[str, Any]) -> Caller:
        subject, expires = claims.get("sub"), claims.get("exp")
        if not isinstance(subject, str) or not 0 < len(subject) <= _MAX_SUBJECT_CHARS:
            raise InvalidToken("token subject is not a string of 1-255 characters", "invalid")
        if not isinstance(expires, int | float):
            raise InvalidToken("token expiry is not a number", "invalid")
        issuer = self.config.issuer
        jti = claims.get("jti")
        # A fixed-size id for the revocation list (Logout) and the rate limiter's bucket.
        token_id = _digest(issuer, str(jti) if isinstance(jti, str) and jti else token)
        role = self.role(claims)
        caller = Caller(
            account_id="oidc:" + _digest(issuer, subject),
            username=subject,
            role=role,
            token_id="oidc:" + token_id,
            expires_at=int(expires),
            issuer=issuer,
        )
        audit.info(
            "provider token accepted: subject=%s issuer=%s role=%s", subject, issuer, role or "-"
        )
        return caller

    def role(self, claims: dict[str, Any]) -> str:
        """The Portico role the token's roles claim grants (the most powerful of them); empty
        when none: such a caller may call only what needs no role (Logout, CheckToken)."""
        granted = set()
        for name in _roles(claims, self.config.roles_claim):
            mapped = self.config.role_map.get(name, name)
            if mapped in ROLE_ORDER:
                granted.add(mapped)
        return next((str(role) for role in ROLE_ORDER if role in granted), "")


def _roles(claims: dict[str, Any], path: str) -> Iterable[str]:
    """The role names at the dotted ``path`` of the claims: a list of strings, or a string of
    space-separated names (as ``scope`` is); at most :data:`limits.MAX_TOKEN_ROLES`."""
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict):
            return ()
        value = value.get(part)
    if isinstance(value, str):
        value = value.split(" ", limits.MAX_TOKEN_ROLES)[: limits.MAX_TOKEN_ROLES]
    if not isinstance(value, list):
        return ()
    return [item for item in value[: limits.MAX_TOKEN_ROLES] if isinstance(item, str)]


def _digest(issuer: str, value: str) -> str:
    return hashlib.sha256(f"{issuer}\0{value}".encode()).hexdigest()[:32]


def unverified_header(token: str) -> dict[str, Any]:
    """A JWT's header, not verified; InvalidToken when it is not one."""
    if len(token) > limits.MAX_PROVIDER_TOKEN_BYTES:
        raise InvalidToken("token is too large")
    try:
        header = jwt.get_unverified_header(token)
    except PyJWTError:
        raise InvalidToken("token is malformed") from None
    return header
