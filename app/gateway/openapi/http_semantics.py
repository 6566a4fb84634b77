"""HTTP's own headers and answers in the OpenAPI document: conditional requests (ETag,
If-None-Match, If-Match, 304, 412) and rate limits (429 with Retry-After)."""

from __future__ import annotations

from typing import Any

from app.gateway.openapi.schemas import STATUS, ref

JSON = "application/json"


# HTTP's conditional requests, from the revisions servicers name in their ``etag`` metadata.
ETAG_HEADER = {
    "description": (
        "Where the reply is made of stored objects: their revisions (one object: its "
        "revision; several: the newest revision and how many; then a digest of any value "
        "taken from elsewhere). Send it back in If-None-Match to revalidate, or in If-Match "
        "to make a write conditional. Absent where a reply is not made of stored objects "
        "alone (statistics that move with time, server information, live streams)."
    ),
    "schema": {"type": "string"},
}
CACHE_CONTROL_HEADER = {
    "description": "`no-cache` with an ETag: a client must revalidate before reusing the reply.",
    "schema": {"type": "string"},
}


def conditional_parameters() -> dict[str, Any]:
    return {
        "IfNoneMatch": {
            "name": "If-None-Match",
            "in": "header",
            "required": False,
            "description": (
                "An ETag this reply had before: while it still holds, the answer is 304 Not "
                "Modified with no body."
            ),
            "schema": {"type": "string"},
        },
        "IfMatch": {
            "name": "If-Match",
            "in": "header",
            "required": False,
            "description": (
                "Where the call updates or deletes a stored object: the ETag it must still "
                "have; otherwise 412 Precondition Failed (FAILED_PRECONDITION naming the "
                "current revision) and nothing changes. Also taken as `if-match` metadata over "
                "gRPC, Connect and gRPC-Web."
            ),
            "schema": {"type": "string"},
        },
    }


# Rate limits (PORTICO_RATE_LIMIT_*) and the login throttle say when to call again.
RETRY_AFTER_HEADER = {
    "description": "Whole seconds until the call may succeed again.",
    "schema": {"type": "integer", "minimum": 0},
}


def too_many_requests_response() -> dict[str, Any]:
    return {
        "description": (
            "Too Many Requests: the caller is over its rate limit (when the server sets one; "
            "per account, or per client address for anonymous calls), or a login is throttled "
            "after failures. RESOURCE_EXHAUSTED with a google.rpc.RetryInfo detail; Retry-After "
            "says when to call again."
        ),
        "headers": {"Retry-After": {"$ref": "#/components/headers/Retry-After"}},
        "content": {JSON: {"schema": ref(STATUS)}},
    }


def not_modified_response() -> dict[str, Any]:
    return {
        "description": "Not Modified: the If-None-Match ETag still holds; no body.",
        "headers": {"ETag": {"$ref": "#/components/headers/ETag"}},
    }
