from __future__ import annotations

import pytest

from app.gateway.http_rules import (
    MethodNotAllowed,
    NoRoute,
    PathTemplate,
    TemplateError,
    Variable,
    build_route_table,
    parse_template,
)

from .conftest import shelf_registry


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/v1/things", PathTemplate(("v1", "things"), ())),
        ("/v1/{name}", PathTemplate(("v1", "*"), (Variable("name", 1, 2),))),
        (
            "/v1/{name=shelves/*/things/**}:get",
            PathTemplate(
                ("v1", "shelves", "*", "things", "**"), (Variable("name", 1, None),), "get"
            ),
        ),
        ("/v1/{a.b}/x:do", PathTemplate(("v1", "*", "x"), (Variable("a.b", 1, 2),), "do")),
    ],
)
def test_parse_template(text: str, expected: PathTemplate) -> None:
    assert parse_template(text) == expected


@pytest.mark.parametrize(
    "text", ["v1/x", "/v1/{name", "/v1/**/x", "/v1/{}", "/v1//x", "/v1/x:", "/v1/{a-b}"]
)
def test_bad_templates_are_refused(text: str) -> None:
    with pytest.raises(TemplateError):
        parse_template(text)


def test_literal_beats_wildcard_and_verbs_are_separate() -> None:
    table = build_route_table(shelf_registry())
    assert table.match("GET", "/v1/shelves/s/things/t:view").plan.method.name == "ViewThing"
    assert table.match("GET", "/v1/shelves/s/things").plan.method.name == "ListThings"
    assert table.match("GET", "/v1/shelves/s/things/t").plan.method.name == "GetThing"
    assert table.match("POST", "/v1/things:echo").plan.method.name == "EchoThing"
    with pytest.raises(NoRoute):
        table.match("GET", "/v1/shelves")
    with pytest.raises(MethodNotAllowed) as caught:
        table.match("POST", "/v1/shelves/s/things/t")
    assert caught.value.allow == {"GET", "DELETE", "PATCH"}


def test_routing_walks_segments_not_routes() -> None:
    """Many RPCs under distinct literal prefixes share one root; a lookup touches one branch."""
    registry = shelf_registry()
    table = build_route_table(registry)
    root = table._root
    assert set(root.literals) == {"v1"}
    assert root.wildcard is None  # no template starts with a variable here


def test_same_route_twice_is_refused() -> None:
    registry = shelf_registry()
    methods = list(registry)
    with pytest.raises(TemplateError):
        build_route_table([*methods, methods[0]])
