"""Whole messages as the RPC protocols carry them: binary protobuf, or JSON with JSON names.

Connect and gRPC-Web name a codec per request (``proto`` or ``json``); their JSON is protojson's
(lowerCamelCase names on output, both spellings accepted on input), whatever the REST routes
emit. Every decoding failure is a :class:`~app.gateway.errors.BadRequest`.
"""

from __future__ import annotations

from typing import Protocol

from google.protobuf.message import DecodeError, Message

from app.gateway.codec.json_mapping import load_json, parse_into
from app.gateway.codec.transcoding import Transcoder
from app.gateway.errors import BadRequest
from app.gateway.http_rules import BindingPlan
from app.gateway.message_checks import request_violations
from app.gateway.registry import Method
from app.settings import limits


class WireCodec(Protocol):
    name: str

    def decode(self, data: bytes, method: Method, what: str = "request message") -> Message:
        """A request message from its encoded bytes."""
        ...

    def encode(self, plan: BindingPlan, reply: Message) -> bytes:
        """A reply message as bytes."""
        ...


class ProtoCodec:
    """Binary protobuf; each request passes the checks the gRPC port's requests pass
    (:mod:`app.gateway.message_checks`), ``strict`` refusing enum numbers no enum defines."""

    name = "proto"

    def __init__(self, strict: bool = True) -> None:
        self.strict = strict

    def decode(self, data: bytes, method: Method, what: str = "request message") -> Message:
        request = method.input_type()
        if not data:
            return request  # the empty message: nothing to parse
        try:
            request.ParseFromString(data)
        except (DecodeError, RecursionError) as exc:
            raise BadRequest(f"{what} is not a valid {method.input_type.__name__}: {exc}") from exc
        found = request_violations(request, self.strict)
        if found:
            raise BadRequest(limits.summary(found), found)
        return request

    def encode(self, plan: BindingPlan, reply: Message) -> bytes:
        return reply.SerializeToString()


class JsonCodec:
    name = "json"

    def __init__(self, transcoder: Transcoder) -> None:
        # Its options name fields in lowerCamelCase; it remembers recent renderings.
        self.transcoder = transcoder

    def decode(self, data: bytes, method: Method, what: str = "request message") -> Message:
        request = method.input_type()
        # An empty body or object is the empty message (as an empty binary body is): the
        # commonest request of all skips the JSON parser, which costs more than the call.
        if data.strip() not in _EMPTY:
            parse_into(load_json(data, what), request, self.transcoder.options, what)
        return request

    def encode(self, plan: BindingPlan, reply: Message) -> bytes:
        return self.transcoder.reply_json(plan, reply)


_EMPTY = (b"", b"{}")
