"""``google.api.http`` rules compiled into path templates, binding plans and a segment trie.

Routing walks the trie one path segment at a time (literal children by dict lookup, then ``*``,
then ``**``), so its cost grows with the path's depth, not with the number of RPCs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from urllib.parse import unquote

from google.protobuf import descriptor

from app.gateway import route_suggestions
from app.gateway.codec.text_fields import FieldPath, resolve_field_path
from app.gateway.registry import HttpBinding, Method


class TemplateError(ValueError):
    """A path template or HttpRule that does not follow the HttpRule grammar."""


@dataclass(frozen=True)
class Variable:
    """A ``{field.path=segments}`` capture covering segments ``start`` up to ``end``."""

    field_path: str
    start: int
    end: int | None  # None: through the last segment (the template ends in ``**``)


@dataclass(frozen=True)
class PathTemplate:
    """A parsed template: segments (literal text, ``*`` or ``**``), variables and custom verb."""

    segments: tuple[str, ...]
    variables: tuple[Variable, ...]
    verb: str = ""


def parse_template(text: str) -> PathTemplate:
    """Parse ``/v1/{name=shelves/*/books/**}:verb`` per the HttpRule template grammar."""
    if not text.startswith("/"):
        raise TemplateError(f"template {text!r} must start with '/'")
    body, verb = _split_verb(text[1:], text)
    segments: list[str] = []
    variables: list[Variable] = []
    for token in _tokens(body, text):
        if token.startswith("{"):
            name, _, pattern = token[1:-1].partition("=")
            if not name or not all(p.isidentifier() for p in name.split(".")):
                raise TemplateError(f"bad variable {token!r} in {text!r}")
            parts = (pattern or "*").split("/")
            start = len(segments)
            for part in parts:
                _check_segment(part, text)
                segments.append(part)
            end = None if parts[-1] == "**" else len(segments)
            variables.append(Variable(name, start, end))
        else:
            _check_segment(token, text)
            segments.append(token)
    if "**" in segments[:-1]:
        raise TemplateError(f"'**' must be the last segment in {text!r}")
    return PathTemplate(tuple(segments), tuple(variables), verb)


def _split_verb(body: str, text: str) -> tuple[str, str]:
    depth = 0
    for index in range(len(body) - 1, -1, -1):
        char = body[index]
        if char == "}":
            depth += 1
        elif char == "{":
            depth -= 1
        elif char == "/" and depth == 0:
            break
        elif char == ":" and depth == 0:
            verb = body[index + 1 :]
            if not verb:
                raise TemplateError(f"empty verb in {text!r}")
            return body[:index], verb
    return body, ""


def _tokens(body: str, text: str) -> Iterator[str]:
    start, depth = 0, 0
    for index, char in enumerate(body):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "/" and depth == 0:
            yield body[start:index]
            start = index + 1
        if depth not in (0, 1):
            raise TemplateError(f"unbalanced braces in {text!r}")
    if depth:
        raise TemplateError(f"unbalanced braces in {text!r}")
    yield body[start:]


def _check_segment(segment: str, text: str) -> None:
    if not segment or any(c in segment for c in "{}=:"):
        raise TemplateError(f"bad segment {segment!r} in {text!r}")


@dataclass(frozen=True)
class BindingPlan:
    """How one HTTP binding of one method fills the request message and shapes the reply."""

    method: Method
    http_method: str
    template: PathTemplate | None  # None for the canonical POST /package.Service/Method
    body: str  # "", "*" or a top-level field name
    response_body: str
    path_fields: tuple[tuple[Variable, FieldPath], ...]
    bound: frozenset[str]  # proto-named field paths set by the path or the body

    @property
    def body_field(self) -> descriptor.FieldDescriptor | None:
        """The request field the body fills, for ``body: "field"``."""
        if self.body in ("", "*"):
            return None
        return self.method.descriptor.input_type.fields_by_name[self.body]


def is_bound(name: str, bound: frozenset[str]) -> bool:
    """Whether the proto-named field path ``name`` (or a parent or child of it) is in ``bound``:
    such a field cannot also come from a query parameter."""
    if "*" in bound:
        return True
    return any(name == b or name.startswith(b + ".") or b.startswith(name + ".") for b in bound)


def compile_binding(method: Method, binding: HttpBinding) -> BindingPlan:
    """Check a binding against the request/response types and precompute its plan."""
    template = parse_template(binding.path)
    input_desc = method.descriptor.input_type
    path_fields = []
    for variable in template.variables:
        try:
            fields = resolve_field_path(input_desc, variable.field_path)
        except Exception as exc:
            raise TemplateError(f"{method.full_name}: no field {variable.field_path!r}") from exc
        assert fields is not None
        if any(f.is_repeated for f in fields) or fields[-1].message_type is not None:
            raise TemplateError(f"{method.full_name}: {variable.field_path!r} is not a scalar")
        path_fields.append((variable, fields))
    if binding.body not in ("", "*") and binding.body not in input_desc.fields_by_name:
        raise TemplateError(f"{method.full_name}: body field {binding.body!r} does not exist")
    output_desc = method.descriptor.output_type
    if binding.response_body and binding.response_body not in output_desc.fields_by_name:
        raise TemplateError(f"{method.full_name}: response_body {binding.response_body!r}")
    bound = {".".join(f.name for f in fields) for _, fields in path_fields}
    if binding.body:
        bound.add(binding.body)
    return BindingPlan(
        method,
        binding.verb,
        template,
        binding.body,
        binding.response_body,
        tuple(path_fields),
        frozenset(bound),
    )


def canonical_plan(method: Method) -> BindingPlan:
    """``POST /package.Service/Method`` with the whole request message as the body."""
    return BindingPlan(method, "POST", None, "*", "", (), frozenset({"*"}))


@dataclass
class _Node:
    literals: dict[str, _Node] = field(default_factory=dict)
    wildcard: _Node | None = None
    # ``**`` and the template ends here: custom verb → HTTP method → plan
    rest: dict[str, dict[str, BindingPlan]] = field(default_factory=dict)
    ends: dict[str, dict[str, BindingPlan]] = field(default_factory=dict)


@dataclass(frozen=True)
class RouteMatch:
    """A plan and the decoded values of its path variables, by field path."""

    plan: BindingPlan
    path_values: tuple[tuple[FieldPath, str], ...]


class NoRoute(LookupError):
    """No template matches the path."""


class MethodNotAllowed(LookupError):
    """Templates match the path, but none for this HTTP method."""

    def __init__(self, allow: frozenset[str]) -> None:
        super().__init__(", ".join(sorted(allow)))
        self.allow = allow


class RouteTable:
    """Every binding plan, indexed for lookup by HTTP method and raw path."""

    def __init__(self, plans: Iterable[BindingPlan]) -> None:
        self._root = _Node()
        self._canonical: dict[str, RouteMatch] = {}
        # Templates without variables, by (method, path): most requests end here in one lookup.
        self._literal: dict[tuple[str, str], RouteMatch] = {}
        self.plans: list[BindingPlan] = []
        self._services: dict[str, list[str]] | None = None  # for suggestions, made when asked
        for plan in plans:
            self.add(plan)

    def add(self, plan: BindingPlan) -> None:
        """Index a plan; a second plan for the same method, template and verb is an error."""
        self.plans.append(plan)
        if plan.template is None:
            self._canonical[plan.method.grpc_path] = RouteMatch(plan, ())
            return
        node = self._root
        segments = plan.template.segments
        for segment in segments:
            if segment == "**":
                break
            if segment == "*":
                node.wildcard = node.wildcard or _Node()
                node = node.wildcard
            else:
                node = node.literals.setdefault(segment, _Node())
        table = node.rest if segments and segments[-1] == "**" else node.ends
        by_method = table.setdefault(plan.template.verb, {})
        if plan.http_method in by_method:
            other = by_method[plan.http_method].method.full_name
            raise TemplateError(f"{plan.method.full_name} and {other} bind the same route")
        by_method[plan.http_method] = plan
        if not any(segment in ("*", "**") for segment in segments):
            path = "/" + "/".join(segments)
            if plan.template.verb:
                path += f":{plan.template.verb}"
            self._literal[(plan.http_method, path)] = RouteMatch(plan, ())

    def match(self, http_method: str, raw_path: str) -> RouteMatch:
        """The plan for a request; raises NoRoute or MethodNotAllowed."""
        literal = self._literal.get((http_method, raw_path))
        if literal is not None:
            return literal
        canonical = self._canonical.get(raw_path)
        if canonical is not None:
            if http_method != "POST":
                raise MethodNotAllowed(frozenset({"POST"}))
            return canonical
        if not raw_path.startswith("/"):
            raise NoRoute(raw_path)
        raw_segments = raw_path[1:].split("/")
        allow: set[str] = set()
        last = raw_segments[-1]
        attempts = []
        colon = last.rfind(":")
        if colon >= 0:  # prefer a custom verb; fall back to a colon inside the last segment
            attempts.append(([*raw_segments[:-1], last[:colon]], unquote(last[colon + 1 :])))
        attempts.append((raw_segments, ""))
        for raw, verb in attempts:
            segments = [unquote(s) for s in raw]
            for by_verb in _walk(self._root, segments, 0):
                by_method = by_verb.get(verb)
                if by_method is None:
                    continue
                plan = by_method.get(http_method)
                if plan is None:
                    allow.update(by_method)
                    continue
                return RouteMatch(plan, _path_values(plan, raw, segments))
        if allow:
            raise MethodNotAllowed(frozenset(allow))
        raise NoRoute(raw_path)

    def close_routes(self, http_method: str, raw_path: str, limit: int = 3) -> list[str]:
        """Served paths close to ``raw_path``, which no route serves: ``/api/v1/cluster/list``
        for ``/api/v1/clustr/list``, with the HTTP method in front where the request's is not
        one the path takes. Only for a 404's message: bounded work (route_suggestions)."""
        if self._services is None:
            self._services = route_suggestions.services_of(self._canonical)
        paths = route_suggestions.close_template_paths(self._root, raw_path, limit)
        paths += route_suggestions.close_canonical_paths(self._services, raw_path, limit)
        said = []
        for path in paths[:limit]:
            methods = self.methods_for_path(path)
            if http_method in methods or not methods:
                said.append(path)
            else:
                said.append(" or ".join(f"{m} {path}" for m in methods))
        return said

    def methods_for_path(self, raw_path: str) -> dict[str, BindingPlan]:
        """HTTP method → plan for every binding whose template matches (for WebSocket upgrades)."""
        found: dict[str, BindingPlan] = {}
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            try:
                found[method] = self.match(method, raw_path).plan
            except LookupError:
                continue
        return found


def _walk(
    node: _Node, segments: list[str], index: int
) -> Iterator[dict[str, dict[str, BindingPlan]]]:
    """Terminal tables matching ``segments[index:]``, most specific first."""
    if index == len(segments):
        if node.ends:
            yield node.ends
    else:
        child = node.literals.get(segments[index])
        if child is not None:
            yield from _walk(child, segments, index + 1)
        if node.wildcard is not None and segments[index]:
            yield from _walk(node.wildcard, segments, index + 1)
    if node.rest:
        yield node.rest


def _path_values(
    plan: BindingPlan, raw: list[str], decoded: list[str]
) -> tuple[tuple[FieldPath, str], ...]:
    """Each variable's text. As google.api.http says, a variable of one segment is fully
    percent-decoded, while one of several segments keeps ``%2F`` as it is, so an encoded slash
    stays distinguishable from a separator."""
    values = []
    for variable, fields in plan.path_fields:
        end = len(raw) if variable.end is None else variable.end
        if variable.end is not None and end - variable.start == 1:
            values.append((fields, decoded[variable.start]))
        else:
            parts = (_decode_keeping_slashes(s) for s in raw[variable.start : end])
            values.append((fields, "/".join(parts)))
    return tuple(values)


def _decode_keeping_slashes(segment: str) -> str:
    return unquote(segment.replace("%2F", "%252F").replace("%2f", "%252f"))


def build_route_table(methods: Iterable[Method]) -> RouteTable:
    """Plans for every binding of every method, plus each method's canonical route."""
    plans: list[BindingPlan] = []
    for method in methods:
        plans.append(canonical_plan(method))
        plans.extend(compile_binding(method, binding) for binding in method.http)
    return RouteTable(plans)
