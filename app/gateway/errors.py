"""gRPC status codes ↔ HTTP statuses, and the errors the gateway raises and renders.

Every error carries a ``google.rpc.Status`` (code, message, details) and is rendered the same way
on REST (as Status JSON with the mapped HTTP status) and on gRPC (as status + rich details)::

    GatewayError                 a gRPC status with optional google.rpc details
    ├── RpcAborted               a servicer ended the call (context.abort / abort_with_status);
    │                            also a grpc.aio.AbortError, so servicers may treat it as one
    ├── BadRequest               the request could not become a message (INVALID_ARGUMENT with
    │                            google.rpc.BadRequest field violations)
    └── HttpRefusal              refused at the HTTP layer before any RPC: no route (404),
                                 wrong method (405 + Allow), unsupported media type (415),
                                 body too large (413), body too slow (408)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from urllib.parse import quote

import grpc
from google.protobuf import any_pb2, json_format
from google.rpc import error_details_pb2, status_pb2

from app.calls.close_names import did_you_mean
from app.gateway.codec import base64_text
from app.settings import limits

# The canonical mapping (google/rpc/code.proto, grpc-gateway): the one table both directions use.
HTTP_STATUS_BY_CODE: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.OK: 200,
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
}
CODE_BY_NUMBER: dict[int, grpc.StatusCode] = {c.value[0]: c for c in grpc.StatusCode}
INTERNAL_MESSAGE = "internal error"
# The trailer that carries a google.rpc.Status (what grpcio-status reads and writes).
STATUS_DETAILS_KEY = "grpc-status-details-bin"
# What grpc-message keeps as it is (PROTOCOL-HTTP2.md: space and VCHAR but "%"); every other
# byte is percent-encoded, as grpc servers encode it.
_MESSAGE_UNENCODED = "".join(chr(c) for c in range(0x20, 0x7F) if c != 0x25)


def grpc_message(text: str) -> str:
    """A status message as gRPC's ``grpc-message`` header carries it."""
    return quote(text, safe=_MESSAGE_UNENCODED)


def grpc_status_fields(error: GatewayError, *, padded: bool = False) -> list[tuple[str, str]]:
    """An error's status as gRPC's trailers carry it (native gRPC's, gRPC-Web's trailer frame):
    ``grpc-status``, ``grpc-message`` and its ``google.rpc.Status`` in ``grpc-status-details-bin``
    whether it has details or not, as grpc servers send it, so that a client reads every
    refusal's status the same way."""
    status = error.status().SerializeToString()
    return [
        ("grpc-status", str(error.code.value[0])),
        ("grpc-message", grpc_message(error.message)),
        (
            STATUS_DETAILS_KEY,
            base64_text.encode(status) if padded else base64_text.encode_unpadded(status),
        ),
    ]


def http_status(code: grpc.StatusCode) -> int:
    """The HTTP status for a gRPC code."""
    return HTTP_STATUS_BY_CODE[code]


class GatewayError(Exception):
    """A gRPC status with optional ``google.rpc`` details, renderable on either transport."""

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        details: Sequence[any_pb2.Any] = (),
        *,
        http_status: int | None = None,
        headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        # Every error is cut to the limits here, whichever transport renders it.
        fitted = limits.fit_status(
            status_pb2.Status(code=code.value[0], message=message, details=details)
        )
        super().__init__(fitted.message)
        self.code = code
        self.message = fitted.message
        self.details = tuple(fitted.details)
        self.http_status = http_status or HTTP_STATUS_BY_CODE[code]
        failed_if_match = code is grpc.StatusCode.FAILED_PRECONDITION and http_status is None
        if failed_if_match and _if_match_failed(self.details):
            self.http_status = 412  # HTTP's own answer to a failed If-Match
        self.headers = tuple(headers)
        given = {name.lower() for name, _ in self.headers}
        if code is grpc.StatusCode.UNAUTHENTICATED and "www-authenticate" not in given:
            self.headers += (("www-authenticate", "Bearer"),)
        retry_after = _retry_after(self.details)
        if retry_after is not None and "retry-after" not in given:
            self.headers += (("retry-after", str(retry_after)),)

    @classmethod
    def from_status(cls, status: status_pb2.Status) -> GatewayError:
        """An error carrying a ``google.rpc.Status`` as given."""
        code = CODE_BY_NUMBER.get(status.code, grpc.StatusCode.UNKNOWN)
        return cls(code, status.message, status.details)

    def status(self) -> status_pb2.Status:
        """This error as a ``google.rpc.Status``."""
        return status_pb2.Status(
            code=self.code.value[0], message=self.message, details=self.details
        )

    def status_dict(self, proto_names: bool = True) -> dict[str, object]:
        """The Status in its JSON form; details whose type is unknown keep their bytes."""
        details = []
        for detail in self.details:
            try:
                details.append(
                    json_format.MessageToDict(detail, preserving_proto_field_name=proto_names)
                )
            except (TypeError, json_format.Error):  # type not in the descriptor pool
                details.append({"@type": detail.type_url, "value": _b64(detail.value)})
        return {"code": self.code.value[0], "message": self.message, "details": details}

    def status_json(self, proto_names: bool = True) -> bytes:
        """The Status as UTF-8 JSON."""
        return json.dumps(self.status_dict(proto_names), separators=(",", ":")).encode()


class RpcAborted(GatewayError, grpc.aio.AbortError):
    """A servicer aborted the call through its context."""


class BadRequest(GatewayError):
    """Input that cannot become the request message: INVALID_ARGUMENT naming the field."""

    def __init__(self, message: str, violations: Iterable[tuple[str, str]] = ()) -> None:
        detail = any_pb2.Any()
        detail.Pack(limits.bad_request(violations))
        super().__init__(grpc.StatusCode.INVALID_ARGUMENT, message, [detail])


class HttpRefusal(GatewayError):
    """A request refused by HTTP rules before it reached any RPC."""


def not_found(path: str, close: Sequence[str] = ()) -> HttpRefusal:
    """No route for the path: 404, with the served paths it is close to."""
    return HttpRefusal(grpc.StatusCode.NOT_FOUND, f"no route for {path}{did_you_mean(close)}")


def method_not_allowed(method: str, path: str, allow: Iterable[str]) -> HttpRefusal:
    """The path is served but not for this HTTP method: 405 with ``Allow``."""
    allowed = ", ".join(sorted(set(allow)))
    return HttpRefusal(
        grpc.StatusCode.UNIMPLEMENTED,
        f"{method} is not allowed on {path}; allowed: {allowed}",
        http_status=405,
        headers=[("allow", allowed)],
    )


def unsupported_media_type(content_type: str, expected: str) -> HttpRefusal:
    """A body in a content type the route does not read: 415."""
    return HttpRefusal(
        grpc.StatusCode.INVALID_ARGUMENT,
        f"content type {content_type or '(none)'} is not supported; send {expected}",
        http_status=415,
    )


def body_too_large(limit: int) -> HttpRefusal:
    """A request body over the configured limit: 413."""
    return HttpRefusal(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        f"request body exceeds the limit of {limit} bytes",
        http_status=413,
    )


def body_too_slow(seconds: float) -> HttpRefusal:
    """A request body that did not arrive within the body timeout: 408."""
    return HttpRefusal(
        grpc.StatusCode.DEADLINE_EXCEEDED,
        f"request body not received within {seconds:g} seconds",
        http_status=408,
    )


def method_not_found(path: str) -> GatewayError:
    """A call of a method nobody serves: UNIMPLEMENTED, in every RPC protocol as a grpc server
    answers it."""
    return GatewayError(grpc.StatusCode.UNIMPLEMENTED, f"Method not found: {path}")


def unsupported_encoding(
    header: str, encoding: str, headers: Sequence[tuple[str, str]] = ()
) -> GatewayError:
    """A message encoding this server does not decode: UNIMPLEMENTED in every RPC protocol, the
    code gRPC's compression spec gives it."""
    return GatewayError(
        grpc.StatusCode.UNIMPLEMENTED,
        f"{header} {encoding!r} is not supported; use gzip or identity",
        headers=headers,
    )


def header_not_parsed(name: str, why: str = "") -> GatewayError:
    """A gRPC header (``grpc-timeout``, a ``-bin`` value) that does not parse: INTERNAL, in
    grpc core's words, as a grpc server (the grpc.aio port) answers it before any handler."""
    return GatewayError(
        grpc.StatusCode.INTERNAL, f"Error parsing '{name}' metadata" + (f": {why}" if why else "")
    )


def internal_error() -> GatewayError:
    """What an unexpected exception becomes: INTERNAL with a message that leaks nothing."""
    return GatewayError(grpc.StatusCode.INTERNAL, INTERNAL_MESSAGE)


def _retry_after(details: Sequence[any_pb2.Any]) -> int | None:
    """Whole seconds of a ``google.rpc.RetryInfo`` detail, which HTTP says as Retry-After."""
    for detail in details:
        info = error_details_pb2.RetryInfo()
        if detail.Unpack(info):  # False for a detail of another type
            delay = info.retry_delay
            return max(0, delay.seconds + (1 if delay.nanos > 0 else 0))
    return None


# The PreconditionFailure violation type a servicer names when a write's If-Match (``if-match``
# metadata) does not name the object's current revision.
IF_MATCH_VIOLATION = "If-Match"


def _if_match_failed(details: Sequence[any_pb2.Any]) -> bool:
    for detail in details:
        failure = error_details_pb2.PreconditionFailure()
        if detail.Unpack(failure):
            return any(v.type == IF_MATCH_VIOLATION for v in failure.violations)
    return False


def _b64(data: bytes) -> str:
    return base64_text.encode(data)
