"""The OpenAPI 3.1 document of every RPC, from the descriptors and the router's JSON options.

Operations come from the same binding plans the router compiles (:mod:`app.gateway.http_rules`),
their paths and parameters from :mod:`app.gateway.openapi.paths`, schemas from the message
descriptors in their proto3 JSON form (:mod:`app.gateway.openapi.schemas`), and descriptions from
the comments in a descriptor set compiled with ``--include_source_info``
(:mod:`app.gateway.openapi.proto_comments`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from google.protobuf import descriptor
from google.rpc import status_pb2

from app.gateway.codec.json_mapping import JsonOptions, message_descriptor
from app.gateway.http_rules import (
    BindingPlan,
    canonical_plan,
    compile_binding,
    is_bound,
)
from app.gateway.idempotency import idempotency_parameter, is_mutating
from app.gateway.openapi.http_semantics import (
    CACHE_CONTROL_HEADER,
    ETAG_HEADER,
    RETRY_AFTER_HEADER,
    conditional_parameters,
    not_modified_response,
    too_many_requests_response,
)
from app.gateway.openapi.paths import Paths, query_parameters
from app.gateway.openapi.proto_comments import source_comments
from app.gateway.openapi.rules import narrowed, required_names
from app.gateway.openapi.schemas import (
    STATUS,
    Schema,
    Schemas,
    reached,
    ref,
    settle_inputs,
)
from app.gateway.registry import Method, Registry
from app.rules.rule_book import RuleBook

PublicMethods = Callable[[Method], bool]

OPENAPI_VERSION = "3.1.0"
SECURITY_SCHEME = "bearerAuth"
NDJSON = "application/x-ndjson"
SSE = "text/event-stream"
JSON = "application/json"
ERROR_STATUSES = ("4XX", "5XX")  # every error, whatever its HTTP status, is a google.rpc.Status


def openapi_document(
    registry: Registry,
    json_options: JsonOptions,
    *,
    title: str,
    version: str,
    public_methods: PublicMethods,
    descriptor_set: str | os.PathLike[str] | bytes | None = None,
    rules: RuleBook | None = None,
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of every binding of every method in ``registry``.

    ``descriptor_set`` (a path or bytes, compiled with source info) supplies the descriptions;
    ``rules`` are what the servicers check of request fields, said as JSON Schema.
    """
    comments = source_comments(descriptor_set) if descriptor_set is not None else {}
    schemas = Schemas(json_options, comments, rules or RuleBook())
    paths = Paths()
    for method in registry:
        for plan, operation_id in _plans_with_ids(method, paths.operation_ids):
            path, parameters = paths.place(plan, schemas)
            parameters += query_parameters(plan, schemas)
            if is_mutating(method):
                parameters.append(idempotency_parameter())
            operation = _operation(plan, operation_id, parameters, schemas, public_methods(method))
            paths.add(path, plan, operation)
    schemas.ref(message_descriptor(status_pb2.Status))  # the Error response's body
    error, not_modified, too_many = (
        _error_response(),
        not_modified_response(),
        too_many_requests_response(),
    )
    headers = {
        "ETag": ETAG_HEADER,
        "Cache-Control": CACHE_CONTROL_HEADER,
        "Retry-After": RETRY_AFTER_HEADER,
    }
    # Only the components an operation or a shared response reaches: a schema nothing refers
    # to is noise to a reader and a warning in linters (Redocly's no-unused-components).
    shared = [paths.items, error, not_modified, too_many, headers]
    components = reached(schemas.components, shared)
    settle_inputs(components, shared)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": title,
            "version": version,
            "description": _info(json_options),
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "servers": [{"url": "/", "description": "The server that serves this document."}],
        "tags": [_tag(s.full_name, comments) for s in registry.services],
        "paths": paths.items,
        "components": {
            "schemas": dict(sorted(components.items())),
            "responses": {
                "Error": error,
                "NotModified": not_modified,
                "TooManyRequests": too_many,
            },
            "headers": headers,
            "securitySchemes": {
                SECURITY_SCHEME: {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
            },
        },
    }


def _tag(service: str, comments: Mapping[str, str]) -> dict[str, str]:
    text = comments.get(service) or f"The RPCs of the gRPC service `{service}`."
    return {"name": service, "description": text}


def _info(options: JsonOptions) -> str:
    names = "proto field names" if options.proto_names else "lowerCamelCase JSON names"
    unknown = "ignored" if options.ignore_unknown else "refused with 400"
    return (
        "Every RPC over REST/JSON (the proto3 JSON mapping): its google.api.http bindings and "
        f"the canonical `POST /package.Service/Method`. Replies use {names}; requests accept "
        f"both spellings; unknown fields are {unknown}. 64-bit integers are strings, enums "
        "are names (numbers accepted). Errors are google.rpc.Status bodies."
    )


def _error_response() -> dict[str, Any]:
    return {
        "description": "The call failed: a google.rpc.Status with the mapped HTTP status.",
        "content": {JSON: {"schema": ref(STATUS)}},
    }


# -- operations ---------------------------------------------------------------------------------


def _plans_with_ids(method: Method, taken: set[str]) -> Iterator[tuple[BindingPlan, str]]:
    """Every binding plan of ``method`` with a unique, deterministic operationId."""
    service = method.service.rpartition(".")[2]
    base = f"{service}_{method.name}"
    for index, binding in enumerate(method.http):
        suffix = "" if index == 0 else f"_{index + 1}"
        yield compile_binding(method, binding), _unique(base + suffix, taken)
    yield canonical_plan(method), _unique(f"{base}_Canonical", taken)


def _unique(candidate: str, taken: set[str]) -> str:
    # Two services of the same name in different packages would otherwise collide.
    name, counter = candidate, 1
    while name in taken:
        counter += 1
        name = f"{candidate}_{counter}"
    taken.add(name)
    return name


def _operation(
    plan: BindingPlan,
    operation_id: str,
    parameters: list[Schema],
    schemas: Schemas,
    public: bool,
) -> Schema:
    method = plan.method
    comment = schemas.comments.get(method.full_name, "")
    summary = _first_sentence(comment) or method.full_name
    operation: Schema = {
        "tags": [method.service],
        "summary": summary,
        "description": _operation_description(plan, comment),
        "operationId": operation_id,
    }
    request_body = _request_body(plan, schemas)
    if request_body is not None:
        operation["requestBody"] = request_body
    headers = conditional_parameters()
    conditional = [headers["IfNoneMatch"]]
    if plan.http_method != "GET":
        conditional.append(headers["IfMatch"])
    operation["parameters"] = [*parameters, *conditional]
    success = _success(plan, schemas)
    success["headers"] = {
        "ETag": {"$ref": "#/components/headers/ETag"},
        "Cache-Control": {"$ref": "#/components/headers/Cache-Control"},
    }
    operation["responses"] = {
        "200": success,
        "304": {"$ref": "#/components/responses/NotModified"},
        "429": {"$ref": "#/components/responses/TooManyRequests"},
        **{kind: {"$ref": "#/components/responses/Error"} for kind in ERROR_STATUSES},
    }
    if plan.http_method != "GET":
        operation["responses"]["412"] = {
            "description": "Precondition Failed: the If-Match ETag is not the current one.",
            "content": {JSON: {"schema": ref(STATUS)}},
        }
    operation["security"] = [] if public else [{SECURITY_SCHEME: []}]
    operation["x-portico-rpc"] = method.full_name
    operation["x-portico-streaming"] = method.kind
    return operation


def _first_sentence(text: str) -> str:
    paragraph = " ".join(text.split("\n\n", 1)[0].split())
    return re.split(r"(?<=\.)\s", paragraph, maxsplit=1)[0]


def _operation_description(plan: BindingPlan, comment: str) -> str:
    method = plan.method
    lines = [comment] if comment else []
    if plan.template is None:
        lines.append("The canonical route: the body is the whole request message.")
    lines.append(f"gRPC: `{method.grpc_path}` ({method.kind.replace('_', ' ')}).")
    if method.client_streaming:
        lines.append("The request body is NDJSON: one request message per line.")
    if method.server_streaming:
        lines.append(
            'Replies stream as NDJSON lines `{"result": ...}`; a failure ends the stream with '
            '`{"error": Status}`. With `Accept: text/event-stream` they come as server-sent events.'
        )
    if method.client_streaming and method.server_streaming:
        lines.append(
            "Bidirectional: open a WebSocket on this path for full duplex (JSON text frames, one "
            'request per frame; replies as `{"result": ...}` frames, a failure as '
            '`{"error": Status}`; an empty frame half-closes). POST is half-duplex.'
        )
    return "\n\n".join(lines)


def _request_body(plan: BindingPlan, schemas: Schemas) -> Schema | None:
    method = plan.method
    input_desc = method.descriptor.input_type
    rules = schemas.rules.call_rules(method.full_name)
    if method.client_streaming:
        # The router reads every request of a client stream from the NDJSON body.
        line, _ = _narrowed(schemas.ref(input_desc, request=True), input_desc, rules, schemas)
        return {
            "required": False,  # no body: no requests
            "description": "One request message per line (NDJSON).",
            "content": {NDJSON: {"schema": line}},
        }
    if not plan.body:
        return None
    if plan.body == "*":
        top_level = frozenset(f[0].name for _, f in plan.path_fields if len(f) == 1)
        if top_level:
            schema = schemas.message(input_desc, exclude=top_level, request=True)
            # The full message stays a component for the canonical route.
            schemas.ref(input_desc, request=True)
        else:
            schema = schemas.ref(input_desc, request=True)
        body_rules = {p: r for p, r in rules.items() if not is_bound(p, _path_bound(plan))}
        schema, required = _narrowed(schema, input_desc, body_rules, schemas)
        required = required or bool(required_names(schemas.rules, input_desc, schemas.key))
    else:
        body_field = plan.body_field
        assert body_field is not None
        schema = schemas.constrained(body_field, request=True)
        text = schemas.comments.get(body_field.full_name)
        if text:
            schema["description"] = text
        prefix = plan.body + "."
        inner = {p.removeprefix(prefix): r for p, r in rules.items() if p.startswith(prefix)}
        required = False
        if body_field.message_type is not None and not body_field.is_repeated:
            schema, required = _narrowed(schema, body_field.message_type, inner, schemas)
        required = required or plan.body in rules
    # A missing body is the empty message, as `{}` would be: required when `{}` is refused.
    return {"required": required, "content": {JSON: {"schema": schema}}}


def _narrowed(
    schema: Schema, desc: descriptor.Descriptor, rules: Mapping[str, Any], schemas: Schemas
) -> tuple[Schema, bool]:
    """``schema`` with this RPC's own rules (its rule book's ``calls``) merged in, and
    whether they require anything (so that an empty message is refused)."""
    if not rules:
        return schema, False
    merged = narrowed(schema, desc, dict(rules), schemas.key, schemas.components)
    return merged, bool(merged.get("required"))


def _path_bound(plan: BindingPlan) -> frozenset[str]:
    return frozenset(".".join(f.name for f in fields) for _, fields in plan.path_fields)


def _success(plan: BindingPlan, schemas: Schemas) -> Schema:
    method = plan.method
    output_desc = method.descriptor.output_type
    if plan.response_body:
        reply = schemas.value(output_desc.fields_by_name[plan.response_body])
    else:
        reply = schemas.ref(output_desc)
    if not method.server_streaming:
        return {"description": "The reply.", "content": {JSON: {"schema": reply}}}
    line = schemas.stream_item(output_desc.full_name, plan.response_body, reply)
    item = line["$ref"].removeprefix("#/components/schemas/")
    # A stream's body is text, which is what a generated function can return: described as
    # JSON, generators parse the whole body as one object and fail. Each line's (or event
    # data's) schema rides alongside: as contentSchema (JSON Schema's keyword for what a string
    # holds, which linters follow) and as x-itemSchema (OpenAPI 3.2's itemSchema under its 3.1
    # extension name), so a client still has a model to read each item with.
    return {
        "description": f"A stream of replies: each item is a `{item}`.",
        "content": {
            NDJSON: {
                "schema": {
                    "type": "string",
                    "description": f"Newline-delimited JSON: one `{item}` per line.",
                    "contentMediaType": NDJSON,
                    "contentSchema": line,
                },
                "x-itemSchema": line,
            },
            SSE: {
                "schema": {
                    "type": "string",
                    "description": (
                        f"Server-sent events: each event's `data` is one `{item}` "
                        '(`{"result": ...}`); a failure ends the stream with `event: error` '
                        'and `data: {"error": Status}`.'
                    ),
                    "contentMediaType": SSE,
                    "contentSchema": line,
                },
                "x-itemSchema": {
                    "type": "object",
                    "description": "One event: its fields, the data's JSON described by "
                    "contentSchema (JSON Schema's keywords for embedded documents).",
                    "properties": {
                        "event": {"type": "string", "enum": ["message", "error"]},
                        "id": {"type": "string", "description": "The event's store revision."},
                        "data": {"type": "string", "contentMediaType": JSON, "contentSchema": line},
                    },
                    "required": ["data"],
                },
            },
        },
    }
