"""Idempotency keys at the seam both transports pass: which calls take one, where it is read,
and the invoker that hands keyed calls to the hook ``main`` injects (it keeps the outcomes).

A call takes a key when it is *mutating*, decided from its descriptor alone: a unary RPC (one
request, one reply) whose ``idempotency_level`` is not ``NO_SIDE_EFFECTS`` and that has no HTTP
``GET`` binding. Streaming RPCs (e.g. edge Create* progress streams) take none: a key on them is
ignored, as on every other call that is not mutating.

The key travels as the ``Idempotency-Key`` HTTP header or the ``idempotency-key`` gRPC metadata
(the HTTP flows pass the header on as metadata, so both transports read it here).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Iterable

from google.protobuf.message import Message

from app.gateway.context import Metadata
from app.gateway.errors import BadRequest
from app.gateway.invoker import Call, Invoker, Request
from app.gateway.options import Idempotency
from app.gateway.registry import Method

HEADER = "Idempotency-Key"
METADATA_KEY = "idempotency-key"
MAX_KEY_LENGTH = 255


def is_mutating(method: Method) -> bool:
    """Whether ``method`` takes an idempotency key (see the module's docstring)."""
    found = _mutating.get(method.grpc_path)
    if found is None:
        found = _mutating[method.grpc_path] = (
            method.kind == "unary"
            and not method.side_effect_free
            and all(binding.verb != "GET" for binding in method.http)
        )
    return found


# is_mutating by method path: asked on every call, and a fact of the descriptors.
_mutating: dict[str, bool] = {}


def idempotency_parameter() -> dict[str, object]:
    """The OpenAPI header parameter of a mutating operation."""
    return {
        "name": HEADER,
        "in": "header",
        "required": False,
        "description": (
            "Makes a retry safe: a repeat of this request with the same key (by the same "
            "caller, within the server's retention, 24 h by default) answers the first "
            "outcome, reply or error, without running the call again; the same key with a "
            "different request is refused with 409 ALREADY_EXISTS naming the key."
        ),
        # What idempotency_key() accepts: printable ASCII without spaces.
        "schema": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_KEY_LENGTH,
            "pattern": "^[!-~]+$",
        },
    }


def idempotency_key(metadata: Iterable[tuple[str, str | bytes]]) -> str | None:
    """The call's idempotency key, or None; BadRequest naming the header if it is malformed."""
    for name, value in metadata:
        if name.lower() != METADATA_KEY:
            continue
        if not isinstance(value, str) or not 0 < len(value) <= MAX_KEY_LENGTH:
            raise _malformed(f"must be 1 to {MAX_KEY_LENGTH} characters")
        if not all("!" <= char <= "~" for char in value):
            raise _malformed("must be printable ASCII without spaces")
        return value
    return None


def _malformed(problem: str) -> BadRequest:
    return BadRequest(f"header {HEADER} {problem}", [(HEADER, problem)])


def keyed(method: Method, metadata: Metadata) -> str | None:
    """The key to honour for this call: None unless the method is mutating and one was sent."""
    return idempotency_key(metadata) if is_mutating(method) else None


class IdempotentInvoker:
    """An invoker that sends keyed calls through the idempotency hook, and the rest straight on."""

    def __init__(self, inner: Invoker, once: Idempotency) -> None:
        self._inner = inner
        self._once = once

    def unary(self, call: Call, request: Request) -> Awaitable[Message]:
        key = keyed(call.method, call.context.invocation_metadata())
        if key is None or not isinstance(request, Message):
            return self._inner.unary(call, request)
        message = request
        return self._once(call.method, key, message, lambda: self._inner.unary(call, message))

    def stream(self, call: Call, request: Request) -> AsyncGenerator[Message, None]:
        return self._inner.stream(call, request)
