"""Messages ↔ HTTP: a request message from body, path and query; a reply rendered as JSON.

Both follow one :class:`~app.gateway.http_rules.BindingPlan` (``google.api.http``'s ``body``,
path variables and ``response_body``), so the same rules hold for every flow that uses them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from google.protobuf.message import Message

from app.gateway.codec.json_mapping import (
    JsonOptions,
    dump_json,
    field_key,
    load_json,
    message_descriptor,
    parse_into,
    to_dict,
)
from app.gateway.codec.text_fields import (
    FieldPath,
    assign_text,
    path_name,
    resolve_field_path,
    set_text_value,
)
from app.gateway.errors import BadRequest
from app.gateway.http_rules import BindingPlan, is_bound

# Renderings remembered: the most recent, at most this many and this many bytes in all (a key
# holds the reply's wire form, the value its JSON).
_RENDER_CACHE_ENTRIES = 1024
_RENDER_CACHE_BYTES = 4 * 1024 * 1024
# A larger reply is rendered each time (a list of many objects is rarely sent twice as it was).
# One event sent to a thousand subscribers is rendered once however many pods it carries (a
# simulated step moving forty instances was rendered afresh for each subscriber).
_RENDER_CACHE_MAX_BYTES = 64 * 1024


class Transcoder:
    """Binds requests and renders replies under one set of JSON options."""

    def __init__(self, options: JsonOptions) -> None:
        self.options = options
        self._rendered: dict[tuple[type, str, bool, bytes], bytes] = {}
        self._rendered_bytes = 0

    def request(
        self,
        plan: BindingPlan,
        path_values: tuple[tuple[FieldPath, str], ...],
        query: bytes,
        body: bytes,
    ) -> Message:
        """The request message: body, then path variables, then query parameters."""
        options = self.options
        request = plan.method.input_type()
        if body:
            value = load_json(body)
            if plan.body == "*":
                parse_into(value, request, options)
            else:
                parse_into({plan.body: value}, request, options)
        # Plain string fields are set directly; the rest go through the JSON mapping as a tree.
        tree: dict[str, Any] = {}
        for fields, text in path_values:
            if not assign_text(request, fields, text):
                set_text_value(tree, fields, text, repeat=False)
        if query:
            self._bind_query(plan, request, query, tree)
        if tree:
            parse_into(tree, request, JsonOptions(options.proto_names, ignore_unknown=False))
        return request

    def _bind_query(
        self, plan: BindingPlan, request: Message, query: bytes, tree: dict[str, Any]
    ) -> None:
        try:
            pairs = query_pairs(query.decode("latin-1"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise BadRequest(f"query string is not valid UTF-8: {exc}") from exc
        desc = message_descriptor(request)
        seen: set[str] = set()
        for key, text in pairs:
            fields = resolve_field_path(desc, key, self.options.ignore_unknown)
            if fields is None:
                continue
            name = path_name(fields)
            if plan.bound and is_bound(name, plan.bound):
                raise BadRequest(
                    f"query parameter {key!r} sets a field the path or body already binds",
                    [(key, "bound by the path or the body")],
                )
            if name in seen or not assign_text(request, fields, text):
                set_text_value(tree, fields, text, repeat=name in seen)
            seen.add(name)

    def reply_json(self, plan: BindingPlan, reply: Message, *, streamed: bool = False) -> bytes:
        """The reply as JSON (``{"result": ...}`` when ``streamed``).

        Rendering JSON costs more than the rest of a small call, and the same replies recur (a
        version, an unchanged object, one event sent to every subscriber): recent small
        renderings are remembered by the reply's bytes.
        """
        # Not deterministic (that costs ~40% more): equal replies whose maps were filled in
        # another order may miss each other's entry, but the same bytes are always the same reply.
        wire = reply.SerializeToString()
        if len(wire) > _RENDER_CACHE_MAX_BYTES:
            return self._render(plan, reply, streamed)
        key = (type(reply), plan.response_body, streamed, wire)
        rendered = self._rendered.get(key)
        if rendered is None:
            rendered = self._render(plan, reply, streamed)
            self._rendered[key] = rendered
            self._rendered_bytes += len(wire) + len(rendered)
            while (
                len(self._rendered) > _RENDER_CACHE_ENTRIES
                or self._rendered_bytes > _RENDER_CACHE_BYTES
            ):
                oldest = next(iter(self._rendered))
                self._rendered_bytes -= len(oldest[3]) + len(self._rendered.pop(oldest))
        return rendered

    def _render(self, plan: BindingPlan, reply: Message, streamed: bool) -> bytes:
        value: Any = to_dict(reply, self.options)
        if plan.response_body:
            desc = message_descriptor(reply).fields_by_name[plan.response_body]
            value = value.get(field_key(desc, self.options))
        return dump_json({"result": value} if streamed else value)


def query_pairs(text: str) -> list[tuple[str, str]]:
    """A query string's (name, value) pairs, ``parse_qsl`` with blank values kept; nothing to
    unescape (the commonest query: ``name=prod``) is only split, in half the time."""
    if "%" in text or "+" in text:
        return parse_qsl(text, keep_blank_values=True, errors="strict")
    return [
        (name, value)
        for name, _, value in (part.partition("=") for part in text.split("&") if part)
    ]
