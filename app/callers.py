"""Who is calling: the caller the gate admitted, as servicers see it, and the account roles.

The gate (:mod:`app.auth.gate`) sets :data:`current_caller` for each call it admits, on either
transport; a servicer that acts per caller reads it here, so the services need nothing else of
the auth package (and the auth package nothing of theirs).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    ADMIN = "admin"
    OPERATOR = "operator"
    VIEWER = "viewer"
    NODE = "node"


@dataclass(frozen=True)
class Caller:
    """Who is calling: the verified claims of their token."""

    account_id: str
    username: str
    role: str
    token_id: str
    expires_at: int


# None for a public call made without a (valid) token.
current_caller: ContextVar[Caller | None] = ContextVar("current_caller", default=None)
