"""Every bound on what one request may cost, in one place (docs/operations/limits.md).

The gateway, the gRPC server and the servicers' validation all read these, so a caller meets the
same limits on either transport. Sizes that an operator tunes (the body limit, read timeouts,
shutdown grace, heartbeats) are settings; the rest are fixed here, chosen far above what a real
caller of these APIs sends and far below what would let one request stall the server.

Error statuses are bounded too: at most :data:`MAX_VIOLATIONS` field violations (the message
then says how many more there were), messages and violation texts cut at a fixed length (input
echoed in a message is never longer than that), and the whole status under
:data:`MAX_ERROR_BYTES` as gRPC metadata, where default clients refuse more than 16 KB.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from google.rpc import error_details_pb2, status_pb2

# -- requests -----------------------------------------------------------------------------------

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
# A request's head: its target and header fields (names and values, trailers of a chunked body
# included), and how many fields. Beyond either the answer is 431 and the connection closes, on
# every server (uvicorn's protocol counts, Envoy's max_request_headers_kb and max_headers_count
# are set from these). Browsers send under 2 KB in some 20 fields; a head of cookies and tokens
# from a proxy chain seldom reaches 16 KB. The grpc.aio port holds a call's metadata to the same
# bytes (RESOURCE_EXHAUSTED past them).
MAX_REQUEST_HEAD_BYTES = 64 * 1024
MAX_REQUEST_HEADERS = 100
# Items (objects, arrays and the members and elements in them) of one JSON document: a request
# body, an NDJSON line or a WebSocket frame. Counted on the raw bytes before parsing.
MAX_JSON_ITEMS = 10_000
# Elements of any one repeated or map field of a request message, on either transport.
MAX_REPEATED_ELEMENTS = 1_000

# -- what requests may ask for (the domain's own caps) ------------------------------------------

# A KaaS cluster: worker pools, and machines per pool (so at most 5 + 10 x 100 machines).
MAX_WORKER_POOLS = 10
MAX_MACHINES_PER_POOL = 100
# Port mappings of one scheduler instance, and filters of one runtime listing.
MAX_PORTS_PER_INSTANCE = 64
MAX_FILTERS = 32

# -- identity providers (app/auth/oidc.py) ------------------------------------------------------

# A provider's token (Keycloak's and Entra ID's with many groups reach a few KB), its keys'
# document (PORTICO_OIDC_JWKS_MAX_BYTES bounds its size; at most this many keys are read of it),
# the discovery document, and the roles read from one token.
MAX_PROVIDER_TOKEN_BYTES = 16 * 1024
DEFAULT_JWKS_MAX_BYTES = 256 * 1024
MAX_JWKS_KEYS = 100
MAX_DISCOVERY_BYTES = 64 * 1024
MAX_TOKEN_ROLES = 256
# Fetches of the provider's documents end within this; the keys are fetched again at most once
# per refresh interval whatever the tokens' key ids, and in the background once this old.
DEFAULT_JWKS_TIMEOUT_SECONDS = 5.0
DEFAULT_JWKS_REFRESH_SECONDS = 5.0
JWKS_MAX_AGE_SECONDS = 3600.0

# -- errors -------------------------------------------------------------------------------------

MAX_VIOLATIONS = 20
MAX_MESSAGE_CHARS = 1024
MAX_VIOLATION_CHARS = 256
# A status as gRPC metadata: grpc-message (percent-encoded) plus grpc-status-details-bin
# (base64 of the whole Status, message included).
MAX_ERROR_BYTES = 8 * 1024
_ELLIPSIS = "…"

# -- streams and connections --------------------------------------------------------------------

DEFAULT_HEARTBEAT_SECONDS = 15.0
# An NDJSON stream's headers go out with its first reply, or after this long without one: long
# enough that a servicer refusing a request (a store read under load) still gets its own HTTP
# status, short enough that a quiet watch soon shows it is connected.
STREAM_HEADERS_WAIT_SECONDS = 2.0
DEFAULT_SHUTDOWN_GRACE_SECONDS = 10.0
DEFAULT_HEADER_TIMEOUT_SECONDS = 10.0
DEFAULT_BODY_TIMEOUT_SECONDS = 30.0
# Concurrent streams one HTTP/2 connection may open (gRPC clients multiplex on one), on the
# one port and on the grpc.aio port; a stream past them is refused (REFUSED_STREAM).
MAX_CONCURRENT_STREAMS = 1024
# Under pyvoy, a REST call's stream that sees no event this long ends (Envoy's default).
DEFAULT_STREAM_IDLE_SECONDS = 300.0
# The heap of a pyvoy worker's allocator (Envoy's buffers, the app's larger objects) by whose
# shares Envoy's overload manager sheds load (app/server/envoy_limits.py).
DEFAULT_MAX_HEAP_BYTES = 512 * 1024**2


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, marked when cut."""
    return text if len(text) <= limit else text[: limit - 1] + _ELLIPSIS


def shown(value: object, limit: int = 64) -> str:
    """A caller's value as quoted in a message: its repr, cut short."""
    return clip(repr(value), limit)


def summary(pairs: Sequence[tuple[str, str]]) -> str:
    """``field: problem; ...`` for the first violations, then how many more there are."""
    text = "; ".join(f"{f}: {d}" for f, d in pairs[:MAX_VIOLATIONS])
    more = f"; and {len(pairs) - MAX_VIOLATIONS} more" if len(pairs) > MAX_VIOLATIONS else ""
    return clip(text, MAX_MESSAGE_CHARS - len(more)) + more


def bad_request(pairs: Iterable[tuple[str, str]]) -> error_details_pb2.BadRequest:
    """The ``google.rpc.BadRequest`` of the first violations, each text cut short."""
    violations: list[error_details_pb2.BadRequest.FieldViolation] = []
    for field, description in pairs:
        if len(violations) == MAX_VIOLATIONS:
            break
        violations.append(
            error_details_pb2.BadRequest.FieldViolation(
                field=clip(field, MAX_VIOLATION_CHARS),
                description=clip(description, MAX_VIOLATION_CHARS),
            )
        )
    return error_details_pb2.BadRequest(field_violations=violations)


def fit_status(status: status_pb2.Status) -> status_pb2.Status:
    """``status`` within the error limits: message cut, violations capped, and details dropped
    from the end while the whole would exceed :data:`MAX_ERROR_BYTES` as gRPC metadata."""
    fitted = status_pb2.Status(code=status.code, message=clip(status.message))
    for detail in status.details:
        given = error_details_pb2.BadRequest()
        # Unpack is False for a detail of another type.
        if detail.Unpack(given) and (
            len(given.field_violations) > MAX_VIOLATIONS or _long_violation(given)
        ):
            pairs = ((v.field, v.description) for v in given.field_violations)
            fitted.details.add().Pack(bad_request(pairs))
            continue
        fitted.details.append(detail)
    while fitted.details and metadata_bytes(fitted) > MAX_ERROR_BYTES:
        del fitted.details[-1]
    return fitted


def metadata_bytes(status: status_pb2.Status) -> int:
    """Bytes of ``status`` as grpc-message and grpc-status-details-bin headers."""
    # grpc percent-encodes every byte outside printable ASCII (and "%") in grpc-message.
    encoded = status.message.encode()
    message = sum(1 if 0x20 <= b <= 0x7E and b != 0x25 else 3 for b in encoded)
    details = (status.ByteSize() + 2) // 3 * 4
    return message + details + 64  # header names and framing


def _long_violation(request: error_details_pb2.BadRequest) -> bool:
    return any(
        len(v.field) > MAX_VIOLATION_CHARS or len(v.description) > MAX_VIOLATION_CHARS
        for v in request.field_violations
    )


def json_items_upper_bound(raw: bytes) -> int:
    """How many JSON items ``raw`` holds at most: commas, braces and brackets outside strings.

    Costs a few C-level passes over the bytes, so a body can be refused before it is parsed.
    """
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    quotes = unescaped.count(b'"')
    if quotes // 2 > MAX_JSON_ITEMS:
        return quotes // 2  # every string is an item (a key or a value)
    outside = b"".join(unescaped.split(b'"')[0::2])
    return outside.count(b",") + outside.count(b"{") + outside.count(b"[") + quotes // 2
