"""Revisions as a caller sees them: the ``etag`` of a reply, the ``if-match`` of a write.

Every stored object has a revision (``app/store``). A servicer whose reply holds stored objects
names their revisions in the reply's ``etag`` metadata (one object: its revision; several: the
newest revision and how many there are, which changes whenever one of them changes, goes or
comes, as revisions are global and only grow). The HTTP gateway makes that its ``ETag`` header.
A reply that also shows values derived from elsewhere (a setting, another record's state) names
them too: their digest follows the revisions, so the tag changes when one of them does.

A write that the caller made conditional with ``if-match`` metadata (HTTP's ``If-Match``
header, passed through as metadata by every transport) is checked against the object's current
revision in the transaction that writes it: a mismatch is FAILED_PRECONDITION naming the
current revision, and nothing changes. Which transport called, the servicer never learns.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar

import grpc
from google.rpc import error_details_pb2

from app.calls.refusals import Rejected

ETAG = "etag"
IF_MATCH = "if-match"

# The entity tags the current call's write must match (None: unconditional). Set per call by
# the servicer's wrapper from its metadata; each call runs in a task of its own.
_IF_MATCH: ContextVar[tuple[str, ...] | None] = ContextVar("portico_if_match", default=None)


def etag(revisions: Iterable[int], derived: Iterable[str] = ()) -> str:
    """The entity tag of a reply holding objects at ``revisions`` and showing ``derived``
    values besides (each one's text; their digest is part of the tag)."""
    held = list(revisions)
    tag = str(held[0]) if len(held) == 1 else f"{max(held, default=0)}-{len(held)}"
    shown = list(derived)
    if shown:
        # Unit separators keep ("a", "bc") and ("ab", "c") apart.
        digest = hashlib.blake2s("\x1f".join(shown).encode(), digest_size=6).hexdigest()
        tag = f"{tag}.{digest}"
    return f'"{tag}"'


def etag_metadata(revisions: Iterable[int], derived: Iterable[str] = ()) -> tuple[tuple[str, str]]:
    """The reply metadata naming ``revisions`` (and ``derived`` values, see :func:`etag`)."""
    return ((ETAG, etag(revisions, derived)),)


def take_if_match(metadata: Iterable[tuple[str, str | bytes]] | None) -> None:
    """Remember the call's ``if-match`` condition (or that it has none) for its writes."""
    for key, value in metadata or ():
        if key == IF_MATCH and isinstance(value, str):
            _IF_MATCH.set(tuple(tag.strip() for tag in value.split(",") if tag.strip()))
            return
    _IF_MATCH.set(None)


def check_if_match(revision: int, what: str) -> None:
    """Refuse the write unless the call's ``if-match`` names ``revision`` (or ``*``)."""
    wanted = _IF_MATCH.get()
    if wanted is None or "*" in wanted or f'"{revision}"' in wanted:
        return
    current = f'"{revision}"'
    # The violation's type tells HTTP to answer 412 Precondition Failed.
    failure = error_details_pb2.PreconditionFailure(
        violations=[
            error_details_pb2.PreconditionFailure.Violation(
                type="If-Match", subject=current, description=f"{what} is at revision {current}"
            )
        ]
    )
    raise Rejected(
        grpc.StatusCode.FAILED_PRECONDITION,
        f"{what} is at revision {current}, not {', '.join(wanted)} (If-Match)",
        details=(failure,),
    )


@contextlib.contextmanager
def unconditional() -> Iterator[None]:
    """Writes a call makes on its own account (not the object the caller named) ignore the
    caller's ``if-match``."""
    token = _IF_MATCH.set(None)
    try:
        yield
    finally:
        _IF_MATCH.reset(token)
