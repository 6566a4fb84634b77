"""JSON Web Tokens: issued at Login, checked on every call (python-jose, HS256 pinned).

Verification is strict on purpose: the algorithm is pinned (``alg: none`` and every other
algorithm are refused), every registered claim Portico issues is required and checked, unknown
``crit`` headers and oversized tokens are refused before any cryptography runs.

A token carries a stamp of the account's password (``pwd_stamp``: a keyed digest of its stored
hash, which tells nothing of the password or the hash). The gate compares it with the account's
current hash whenever it reads the account, so a password change refuses every token issued
before it, in every process, as a disabled account's tokens are refused.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from jose import ExpiredSignatureError, JWTError, jwt

from app.settings.config import ConfigurationError

ALGORITHM = "HS256"
ISSUER = "portico"
AUDIENCE = "portico"
MIN_SECRET_BYTES = 32
# Portico's own tokens are ~300 bytes; anything far larger is an attack on the parser.
MAX_TOKEN_BYTES = 4096
LEEWAY_SECONDS = 30
SECRET_FILE = "jwt-secret"
_BAD_SIGNATURE = "Signature verification failed"
_REQUIRED = ("exp", "iat", "nbf", "iss", "aud", "sub", "jti")
# The password stamp's claim, and its length in bytes of digest (96 bits: no two hashes an
# account will ever have share one).
STAMP_CLAIM = "pwd_stamp"
_STAMP_BYTES = 12


class InvalidToken(Exception):
    """The token cannot be trusted; the message says why (safe to log, never the token), and
    ``reason`` is one word for it (a metric label: malformed, expired, invalid, revoked,
    account, role_changed, password_changed)."""

    def __init__(self, message: str, reason: str = "malformed") -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Claims:
    """The verified claims of one token."""

    subject: str  # the account id
    name: str  # the username
    role: str
    token_id: str  # jti
    issued_at: int
    expires_at: int
    # The stamp of the account's password when it was issued ("" in a token without one).
    password_stamp: str = ""


@dataclass(frozen=True)
class TokenIssuer:
    """Signs and verifies Portico's tokens with one HS256 secret."""

    secret: bytes
    ttl_seconds: int = 3600
    leeway_seconds: int = LEEWAY_SECONDS

    def __post_init__(self) -> None:
        if len(self.secret) < MIN_SECRET_BYTES:
            raise ConfigurationError(
                f"PORTICO_JWT_SECRET: the JWT secret must be at least {MIN_SECRET_BYTES} bytes "
                f"(got {len(self.secret)}); set PORTICO_JWT_SECRET or let Portico generate one"
            )

    def fingerprint(self) -> int:
        """A number that tells this secret from another and says nothing more of it (63 bits
        of an HMAC keyed by it): processes sharing a store compare theirs there."""
        digest = hmac.new(self.secret, b"portico signing secret", hashlib.sha256).digest()
        return int.from_bytes(digest[:8], "big") >> 1

    def password_stamp(self, password_hash: str) -> str:
        """The stamp a token of an account with ``password_hash`` carries: changes with every
        password (a new salt each time), and needs this secret to compute."""
        message = b"portico password stamp\0" + password_hash.encode()
        digest = hmac.new(self.secret, message, hashlib.sha256).digest()[:_STAMP_BYTES]
        return base64.urlsafe_b64encode(digest).decode()

    def stamp_matches(self, stamp: str, password_hash: str) -> bool:
        """Whether a token's ``stamp`` is that of the account's current ``password_hash``."""
        return hmac.compare_digest(stamp, self.password_stamp(password_hash))

    def issue(
        self,
        *,
        account_id: str,
        username: str,
        role: str,
        password_stamp: str,
        developer: str = "",
        operator: str = "",
        now: float | None = None,
    ) -> tuple[str, Claims]:
        """A signed token for the account, and its claims; ``password_stamp`` is
        :meth:`password_stamp` of the account's password hash.

        ``developer``/``operator`` (the edge organisation a bound account acts for) are written
        into the token only so the dashboard can say so and shape its actions; nothing verifies
        them: the gate reads the binding from the account on every check.
        """
        issued = int(time.time() if now is None else now)
        claims = Claims(
            account_id,
            username,
            role,
            uuid.uuid4().hex,
            issued,
            issued + self.ttl_seconds,
            password_stamp,
        )
        payload = {
            "sub": claims.subject,
            "name": claims.name,
            "role": claims.role,
            "jti": claims.token_id,
            "iat": claims.issued_at,
            "nbf": claims.issued_at,
            "exp": claims.expires_at,
            "iss": ISSUER,
            "aud": AUDIENCE,
            STAMP_CLAIM: claims.password_stamp,
        }
        payload.update({k: v for k, v in (("developer", developer), ("operator", operator)) if v})
        return jwt.encode(payload, self.secret, algorithm=ALGORITHM), claims

    def verify(self, token: str, *, now: float | None = None) -> Claims:
        """The claims of a well-formed, correctly signed, current token; InvalidToken otherwise."""
        if len(token) > MAX_TOKEN_BYTES:
            raise InvalidToken("token is too large")
        try:
            header = jwt.get_unverified_header(token)
        except JWTError as exc:
            raise InvalidToken("token is malformed") from exc
        if header.get("alg") != ALGORITHM:
            raise InvalidToken(f"token algorithm must be {ALGORITHM}")
        if "crit" in header:
            # RFC 7515 §4.1.11: extensions we do not understand make the token invalid.
            raise InvalidToken("token has critical header extensions Portico does not support")
        try:
            payload = jwt.decode(
                token,
                self.secret,
                algorithms=[ALGORITHM],
                audience=AUDIENCE,
                issuer=ISSUER,
                options={
                    **{f"require_{c}": True for c in _REQUIRED},
                    "leeway": self.leeway_seconds,
                },
            )
        except ExpiredSignatureError as exc:
            # Said so that a user knows what to do (tokens last PORTICO_TOKEN_TTL_SECONDS,
            # accepted LEEWAY_SECONDS past their expiry for clocks that differ).
            raise InvalidToken("the token has expired; log in again", "expired") from exc
        except JWTError as exc:
            if _BAD_SIGNATURE in str(exc):  # python-jose's words, wrapped in a JWTError
                raise InvalidToken(
                    "the token was not signed by this server (it is another server's, or this "
                    "server's signing secret changed since); log in again",
                    "invalid",
                ) from exc
            raise InvalidToken(f"token is not valid: {exc}", "invalid") from exc
        current = time.time() if now is None else now
        try:
            claims = Claims(
                subject=str(payload["sub"]),
                name=str(payload.get("name", "")),
                role=str(payload.get("role", "")),
                token_id=str(payload["jti"]),
                issued_at=int(payload["iat"]),
                expires_at=int(payload["exp"]),
                password_stamp=str(payload.get(STAMP_CLAIM, "")),
            )
        except (TypeError, ValueError) as exc:
            raise InvalidToken("token claims have the wrong types") from exc
        if claims.issued_at > current + self.leeway_seconds:
            raise InvalidToken("token was issued in the future")
        if not claims.token_id or not claims.subject:
            raise InvalidToken("token lacks a subject or an id")
        return claims


def load_secret(configured: str, data_dir: Path) -> bytes:
    """The configured secret, or one generated once and kept in ``data_dir`` (mode 0600)."""
    if configured:
        return configured.encode()
    path = data_dir / SECRET_FILE
    if path.exists():
        return path.read_bytes().strip()
    data_dir.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_urlsafe(48).encode()
    # Written to a private temporary file, then linked into place: the secret is never readable
    # by others, and workers starting together all end up with the one that won the link.
    temporary = data_dir / f".{SECRET_FILE}.{os.getpid()}"
    with open(temporary, "wb", opener=lambda p, flags: os.open(p, flags, 0o600)) as out:
        out.write(secret)
    try:
        os.link(temporary, path)
    except FileExistsError:
        secret = path.read_bytes().strip()
    finally:
        temporary.unlink()
    return secret
