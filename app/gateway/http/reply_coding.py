"""HTTP's validators for a reply the servicer built: ``ETag``, ``If-None-Match`` and 304.

A servicer names the revision(s) its reply holds in an ``etag`` metadata entry (so a gRPC
client reads the same in the reply's metadata); here that entry becomes the ``ETag`` header, and
a request whose ``If-None-Match`` names it is answered ``304 Not Modified`` with no body.
"""

from __future__ import annotations

ETAG_KEY = "etag"
NO_CACHE = (b"cache-control", b"no-cache")


def etag_of(metadata: tuple[tuple[str, str | bytes], ...]) -> str | None:
    """The ``etag`` a servicer put in its metadata, if any."""
    for key, value in metadata:
        if key == ETAG_KEY and isinstance(value, str):
            return value
    return None


def none_match(header: bytes | None, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (weak comparison, as RFC 9110 asks for GET)."""
    if header is None:
        return False
    text = header.decode("latin-1").strip()
    if text == "*":
        return True
    wanted = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == wanted for tag in text.split(","))
