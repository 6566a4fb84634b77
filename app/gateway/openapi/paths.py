"""The OpenAPI paths of an RPC's bindings and their parameters (for :mod:`.document`).

A path variable becomes one OpenAPI path parameter named after its field path, so
``/v1/{name=shelves/*}`` is ``/v1/{name}``: OpenAPI templates cannot match several segments, so a
variable whose pattern spans segments carries a ``pattern`` and is sent with its ``/`` unescaped.
Fields the path and body leave unbound become query parameters, dotted for nested ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import descriptor

from app.gateway.http_rules import BindingPlan, Variable, is_bound
from app.gateway.openapi.rules import element, not_zero
from app.gateway.openapi.schemas import WRAPPERS, Schema, Schemas, is_map, is_well_known

# Messages a query parameter can set from one string: the well-known types JSON writes as one.
_QUERY_WKTS = frozenset(
    {
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
        "google.protobuf.FieldMask",
        "google.protobuf.Value",
        *WRAPPERS,
    }
)


@dataclass
class Paths:
    """Path items by OpenAPI path, keeping templates that differ only in names apart."""

    items: dict[str, dict[str, Schema]] = field(default_factory=dict)
    operation_ids: set[str] = field(default_factory=set)
    shapes: dict[str, str] = field(default_factory=dict)  # path with names blanked → path

    def place(self, plan: BindingPlan, schemas: Schemas) -> tuple[str, list[Schema]]:
        """The OpenAPI path of ``plan`` and its path parameters, distinct from those placed."""
        verb = plan.http_method.lower()
        parameters = _path_parameters(plan, schemas)
        path = _openapi_path(plan, [p["name"] for p in parameters])
        existing = self.shapes.get(_blank_names(path))
        if existing is not None and existing != path:
            # OpenAPI forbids two templates differing only in parameter names: reuse the first
            # path's names, positionally; each parameter's description names the field it sets.
            names = re.findall(r"\{([^}]+)\}", existing)
            for parameter, name in zip(parameters, names, strict=True):
                if parameter["name"] != name:
                    note = f"Sets `{parameter['name']}`."
                    parameter["description"] = f"{note} {parameter.get('description', '')}".strip()
                    parameter["name"] = name
            path = existing
        if verb in self.items.get(path, {}):
            # Same shape and verb (the patterns differ only in literals): spell the literals out.
            parameters = _expanded_parameters(plan, schemas)
            path = _openapi_path(plan, [p["name"] for p in parameters], expand=True)
            if verb in self.items.get(path, {}):
                raise ValueError(f"{plan.method.full_name}: no distinct OpenAPI path for {path}")
        self.shapes.setdefault(_blank_names(path), path)
        return path, parameters

    def add(self, path: str, plan: BindingPlan, operation: Schema) -> None:
        """Put ``operation`` on ``path`` under its HTTP method."""
        self.items.setdefault(path, {})[plan.http_method.lower()] = operation


def _blank_names(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def _openapi_path(plan: BindingPlan, names: list[str], *, expand: bool = False) -> str:
    """The OpenAPI path template of a plan: one ``{name}`` per variable (or per wildcard)."""
    if plan.template is None:
        return plan.method.grpc_path
    starts = {v.start: v for v, _ in plan.path_fields}
    segments = plan.template.segments
    parts: list[str] = []
    names_left = iter(names)
    index = 0
    while index < len(segments):
        variable = starts.get(index)
        if variable is None:
            parts.append(segments[index])
            index += 1
            continue
        end = len(segments) if variable.end is None else variable.end
        if expand:
            parts += [
                "{" + next(names_left) + "}" if s in ("*", "**") else s for s in segments[index:end]
            ]
        else:
            parts.append("{" + next(names_left) + "}")
        index = end
    path = "/" + "/".join(parts)
    return f"{path}:{plan.template.verb}" if plan.template.verb else path


def _path_parameters(plan: BindingPlan, schemas: Schemas) -> list[Schema]:
    """One required path parameter per template variable, named after its field path."""
    parameters = []
    for variable, fields in plan.path_fields:
        name = ".".join(schemas.key(f) for f in fields)
        schema = schemas.single(fields[-1])
        rule = schemas.rules.field_rule(fields[-1].full_name)
        if rule is not None:
            schema = element(schema, fields[-1], rule, required=True)  # a segment is never empty
        pattern = _variable_regex(plan, variable)
        description = schemas.comments.get(fields[-1].full_name, "")
        if pattern is not None:
            schema = {**schema, "pattern": pattern}
            note = (
                f"`{name}` spans path segments (`{_pattern_text(plan, variable)}`); "
                "send its `/` unescaped."
            )
            description = f"{description} {note}".strip()
        parameter: Schema = {"name": name, "in": "path", "required": True, "schema": schema}
        if description:
            parameter["description"] = description
        parameters.append(parameter)
    return parameters


def _expanded_parameters(plan: BindingPlan, schemas: Schemas) -> list[Schema]:
    """One path parameter per wildcard of each variable, for templates OpenAPI cannot tell apart."""
    parameters = []
    for variable, fields in plan.path_fields:
        name = ".".join(schemas.key(f) for f in fields)
        wildcards = [s for s in _variable_segments(plan, variable) if s in ("*", "**")]
        for number, wildcard in enumerate(wildcards, start=1):
            parameters.append(
                {
                    "name": f"{name}_{number}",
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string"},
                    "description": (
                        f"Wildcard {number} of `{name}` (`{_pattern_text(plan, variable)}`)"
                        + ("; may span segments." if wildcard == "**" else ".")
                    ),
                }
            )
    return parameters


def _variable_segments(plan: BindingPlan, variable: Variable) -> tuple[str, ...]:
    assert plan.template is not None
    return plan.template.segments[variable.start : variable.end]


def _pattern_text(plan: BindingPlan, variable: Variable) -> str:
    return "/".join(_variable_segments(plan, variable))


def _variable_regex(plan: BindingPlan, variable: Variable) -> str | None:
    """A regex for a variable's value when its pattern is more than one ``*``; else None."""
    segments = _variable_segments(plan, variable)
    if segments == ("*",):
        return None
    regex = ""
    for index, segment in enumerate(segments):
        slash = "/" if index else ""
        if segment == "**":  # zero or more segments
            regex += f"(?:{slash}.*)?" if index else ".*"
        elif segment == "*":
            regex += slash + "[^/]+"
        else:
            regex += slash + re.escape(segment)
    return f"^{regex}$"


def query_parameters(plan: BindingPlan, schemas: Schemas) -> list[Schema]:
    """Query parameters for the fields the path and body leave unbound (dotted for nested)."""
    if plan.body == "*" or plan.method.client_streaming:
        return []
    input_desc = plan.method.descriptor.input_type
    rules = schemas.rules.call_rules(plan.method.full_name)
    return [
        _query_parameter(fields, schemas, rules.get(".".join(f.name for f in fields)))
        for fields in _query_fields(input_desc, (), plan.bound, frozenset({input_desc.full_name}))
    ]


def _query_fields(
    desc: descriptor.Descriptor,
    prefix: tuple[descriptor.FieldDescriptor, ...],
    bound: frozenset[str],
    seen: frozenset[str],
) -> Iterator[tuple[descriptor.FieldDescriptor, ...]]:
    """Field paths a query parameter can set: scalars, enums, string-shaped WKTs, nested."""
    for fd in desc.fields:
        path = (*prefix, fd)
        name = ".".join(f.name for f in path)
        if is_map(fd) or any(name == b or name.startswith(b + ".") for b in bound):
            continue
        message = fd.message_type
        if message is None or message.full_name in _QUERY_WKTS:
            if not is_bound(name, bound):
                yield path
        elif not fd.is_repeated and message.full_name not in seen and not is_well_known(message):
            # Recursive messages stop at their first repetition.
            yield from _query_fields(message, path, bound, seen | {message.full_name})


def _query_parameter(
    fields: tuple[descriptor.FieldDescriptor, ...], schemas: Schemas, rule: Any = None
) -> Schema:
    """The query parameter of a field path; ``rule``: the RPC's own rule for it, if any."""
    fd = fields[-1]
    required = rule is not None and (rule.required or bool(rule.min_items))
    parameter: Schema = {
        "name": ".".join(schemas.key(f) for f in fields),
        "in": "query",
        "required": required,
    }
    text = schemas.comments.get(fd.full_name)
    if text:
        parameter["description"] = text
    if fd.GetOptions().deprecated:
        parameter["deprecated"] = True
    schema = schemas.constrained(fd, request=True)
    if required and fd.is_repeated:
        schema["minItems"] = max(rule.min_items or 1, schema.get("minItems", 0))
    elif required:
        schema = (
            {**schema, **not_zero(fd)} if "not" not in schema else {"allOf": [schema, not_zero(fd)]}
        )
    parameter["schema"] = schema
    if fd.is_repeated:
        parameter["explode"] = True  # repeated fields repeat the parameter: ?tag=a&tag=b
    return parameter
