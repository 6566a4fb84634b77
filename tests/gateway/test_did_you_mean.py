"""REST refusals suggest the names a caller was close to, as ``portico call`` does: a path no
route serves, a field the message does not have (in the body or the query). The suggestions are
worked out on the error path only, with bounded work whatever the request holds."""

from __future__ import annotations

import time
from typing import Any

import pytest

from app.gateway.http_rules import build_route_table
from app.gateway.registry import Registry

from .test_routes import rest


def _refusal(method: str, path: str, **kwargs: Any) -> tuple[int, str, list[Any]]:
    response, seen = rest(method, path, **kwargs)
    assert seen is None  # refused before the servicer
    body = response.json()
    violations = body["details"][0]["field_violations"] if body["details"] else []
    return response.status_code, body["message"], violations


@pytest.mark.parametrize(
    ("method", "path", "meant"),
    [
        ("GET", "/v1/shelvs/s1/things", "/v1/shelves/s1/things"),
        ("GET", "/v1/shelves/s1/thngs", "/v1/shelves/s1/things"),
        ("POST", "/v1/fail/", "/v1/fail"),  # a trailing slash
        ("POST", "/v1/things:ecko", "/v1/things:echo"),  # a custom verb
        ("GET", "/v1/things:ecko", "POST /v1/things:echo"),  # and the method it takes
        ("POST", "/portico.test.v1.Shelv/EchoThing", "/portico.test.v1.Shelf/EchoThing"),
        ("POST", "/portico.test.v1.Shelf/EchoThings", "/portico.test.v1.Shelf/EchoThing"),
    ],
)
def test_a_path_no_route_serves_names_the_routes_it_is_close_to(method, path, meant) -> None:
    status, message, _ = _refusal(method, path)
    assert status == 404
    assert message.startswith(f"no route for {path}; did you mean {meant}")


def test_a_path_close_to_nothing_gets_no_suggestion() -> None:
    status, message, _ = _refusal("GET", "/v2/elsewhere")
    assert (status, message) == (404, "no route for /v2/elsewhere")


@pytest.mark.parametrize(
    ("body", "field", "meant"),
    [
        ({"nme": "a"}, "nme", "name"),
        ({"displayNme": "a"}, "displayNme", "displayName"),  # JSON's spelling, answered in it
        ({"part": {"indx": 1}}, "part.indx", "part.index"),
        ({"parts": [{"id": "a"}, {"indx": 1}]}, "parts[1].indx", "parts[1].index"),
    ],
)
def test_an_unknown_body_field_names_the_fields_it_is_close_to(body, field, meant) -> None:
    status, message, violations = _refusal("POST", "/v1/things:echo", json=body)
    assert status == 400
    assert message == f"invalid {field}: no such field; did you mean {meant}?"
    assert violations == [{"field": field, "description": f"no such field; did you mean {meant}?"}]


def test_an_unknown_query_parameter_names_the_fields_it_is_close_to() -> None:
    status, message, violations = _refusal(
        "GET", "/v1/shelves/s1/things/t1", params={"filter.min_sise": "1"}
    )
    assert status == 400
    assert message == (
        "unknown query parameter 'filter.min_sise': no such field; did you mean filter.min_size?"
    )
    assert violations[0]["field"] == "filter.min_sise"


def test_portico_s_own_misspelt_route_of_the_issue() -> None:
    table = build_route_table(Registry.from_package("gen"))
    assert table.close_routes("GET", "/api/v1/clustr/list") == ["/api/v1/cluster/list"]
    assert table.close_routes("DELETE", "/api/v1/clustr/list") == ["GET /api/v1/cluster/list"]


@pytest.mark.parametrize(
    "path",
    [
        "/" + "x" * 100_000,  # too long to be a slip of the keyboard
        "/" + "/".join(["api"] * 5_000),  # too deep
        "/api/" + "/".join(["v1"] * 30),  # within the bounds, matching a prefix again and again
        "/" + "/".join(f"s{i}" for i in range(31)),
    ],
)
def test_a_suggestion_costs_little_whatever_the_path(path: str) -> None:
    table = build_route_table(Registry.from_package("gen"))
    started = time.process_time()
    assert table.close_routes("GET", path) == []
    # Not a speed measurement: the bound is on steps; this only catches work without a bound.
    assert time.process_time() - started < 1.0
