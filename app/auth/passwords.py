"""Password hashing with scrypt (stdlib), strong by default and cheap by setting in tests.

Hashes are self-describing (``scrypt$n$r$p$salt$hash``), so the cost can rise later without
invalidating stored accounts.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass

# The login rule's bounds (app.auth.field_rules), which account passwords meet too.
from app.auth.field_rules import MAX_PASSWORD_BYTES, MIN_PASSWORD_BYTES

__all__ = ["MAX_PASSWORD_BYTES", "MIN_PASSWORD_BYTES", "STRONG_COST", "PasswordHasher"]

# OWASP's scrypt recommendation (N=2^17, r=8, p=1), about 0.1 s and 128 MiB per hash.
STRONG_COST = 2**17


@dataclass(frozen=True)
class PasswordHasher:
    """Hashes and checks passwords; ``cost`` is scrypt's N (a power of two)."""

    cost: int = STRONG_COST
    block_size: int = 8
    parallelism: int = 1

    def hash(self, password: str) -> str:
        """A salted hash of ``password`` to store."""
        salt = os.urandom(16)
        digest = self._derive(password, salt, self.cost, self.block_size, self.parallelism)
        return "$".join(
            [
                "scrypt",
                str(self.cost),
                str(self.block_size),
                str(self.parallelism),
                _b64(salt),
                _b64(digest),
            ]
        )

    def verify(self, password: str, stored: str) -> bool:
        """Whether ``password`` matches ``stored``; False for any malformed hash."""
        try:
            scheme, n, r, p, salt, digest = stored.split("$")
            if scheme != "scrypt":
                return False
            expected = base64.b64decode(digest)
            actual = self._derive(password, base64.b64decode(salt), int(n), int(r), int(p))
        except (ValueError, TypeError):
            return False
        return hmac.compare_digest(actual, expected)

    def burn(self, password: str) -> None:
        """Spend one verification's time, so an unknown user answers as slowly as a known one."""
        self._derive(password, b"\0" * 16, self.cost, self.block_size, self.parallelism)

    @staticmethod
    def _derive(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
        return hashlib.scrypt(
            password.encode(), salt=salt, n=n, r=r, p=p, maxmem=256 * 1024 * 1024, dklen=32
        )


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()
