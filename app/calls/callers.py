"""Who is calling: the caller the gate admitted, as servicers see it, and the account roles.

The gate (:mod:`app.auth.gate`) sets :data:`current_caller` for each call it admits, on either
transport; a servicer that acts per caller reads it here, so the services need nothing else of
the auth package (and the auth package nothing of theirs).
"""

from __future__ import annotations

import uuid
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum

import grpc


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
    # The edge organisation the account acts for, read from the account (not the token).
    developer: str = ""
    operator: str = ""
    # The identity provider that vouched for the caller (empty: one of Portico's accounts, and
    # ``account_id``/``username`` are its id and name; else they are derived from its subject).
    issuer: str = ""


# None for a public call made without a (valid) token.
current_caller: ContextVar[Caller | None] = ContextVar("current_caller", default=None)


def call_request_id(context: grpc.aio.ServicerContext) -> str:
    """The call's ``x-request-id`` (every REST call has one), or a fresh one to quote in
    replies and the log alike."""
    for key, value in context.invocation_metadata() or ():
        if key == "x-request-id" and isinstance(value, str):
            return value
    return uuid.uuid4().hex
