"""The routes a path no route matches was probably meant for: the 404's "did you mean".

Computed only on that error path, segment by segment down the route trie: where a segment
matches no literal child, the children closest to it are tried instead (at most two such
corrections per path, and a bounded number of steps in all), so the cost grows with the depth
of the path and the fan-out of the trie, never with the number of routes. The canonical
``/package.Service/Method`` paths are corrected as a service name and then a method name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import unquote

from app.calls.close_names import close_names

if TYPE_CHECKING:
    from app.gateway.http_rules import _Node

MAX_PATH_CHARS = 512
MAX_SEGMENTS = 32
MAX_EDITS = 2
MAX_STEPS = 256


def close_template_paths(root: _Node, raw_path: str, limit: int) -> list[str]:
    """Paths of the trie's templates that differ from ``raw_path`` in a segment or two."""
    if len(raw_path) > MAX_PATH_CHARS or not raw_path.startswith("/"):
        return []
    segments = [unquote(s) for s in raw_path[1:].split("/")]
    if len(segments) > MAX_SEGMENTS:
        return []
    verb = ""
    head, colon, tail = segments[-1].rpartition(":")
    if colon and head:
        segments[-1], verb = head, tail
    found: list[str] = []
    steps = 0

    def walk(node: _Node, index: int, chosen: tuple[str, ...], edits: int) -> None:
        nonlocal steps
        steps += 1
        if steps > MAX_STEPS or len(found) >= limit:
            return
        if index == len(segments):
            if verb in node.ends:
                _add(found, chosen, verb, edits)
            elif node.ends and edits < MAX_EDITS:
                for other in close_names(verb, node.ends, n=1):
                    _add(found, chosen, other, edits + 1)
            return
        segment = segments[index]
        child = node.literals.get(segment)
        if child is not None:
            walk(child, index + 1, (*chosen, segment), edits)
        if node.wildcard is not None and segment:
            walk(node.wildcard, index + 1, (*chosen, segment), edits)
        if node.rest and verb in node.rest:
            _add(found, (*chosen, *segments[index:]), verb, edits)
        if edits < MAX_EDITS and not segment and index == len(segments) - 1:
            walk(node, index + 1, chosen, edits + 1)  # a trailing slash: the path without it
        if edits < MAX_EDITS:
            for other in close_names(segment, node.literals, n=2):
                if other != segment:
                    walk(node.literals[other], index + 1, (*chosen, other), edits + 1)

    walk(root, 0, (), 0)
    return found


def _add(found: list[str], segments: tuple[str, ...], verb: str, edits: int) -> None:
    if edits == 0:
        return  # the path as given: its route wants another HTTP method (said otherwise)
    path = "/" + "/".join(segments) + (f":{verb}" if verb else "")
    if path not in found:
        found.append(path)


def close_canonical_paths(services: dict[str, list[str]], raw_path: str, limit: int) -> list[str]:
    """``/package.Service/Method`` paths close to ``raw_path`` (the service, then the method)."""
    service, slash, method = raw_path.lstrip("/").partition("/")
    if not slash or "." not in service or "/" in method:
        return []
    names = [service] if service in services else close_names(service, services, n=limit)
    found = []
    for name in names:
        methods = services[name]
        close = [method] if method in methods else close_names(method, methods, n=limit)
        found += [f"/{name}/{m}" for m in close if (name, m) != (service, method)]
    return found[:limit]


def services_of(grpc_paths: Iterable[str]) -> dict[str, list[str]]:
    """The methods of each service, from ``/package.Service/Method`` paths."""
    services: dict[str, list[str]] = {}
    for path in grpc_paths:
        service, _, method = path.lstrip("/").partition("/")
        services.setdefault(service, []).append(method)
    return services
