from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

import grpc
import pytest
from google.protobuf import json_format

from app.gateway.admission import NO_AUTH
from app.gateway.codec.json_mapping import JsonOptions
from app.gateway.codec.transcoding import query_pairs
from app.gateway.errors import GatewayError
from app.gateway.routes import GatewayOptions

from .conftest import run, serving
from .shelf import pb


def rest(
    method: str, path: str, options: GatewayOptions | None = None, **kwargs: Any
) -> tuple[Any, Any]:
    """(response, the request message the servicer saw or None) for one REST call."""

    async def call() -> tuple[Any, Any]:
        async with serving(options) as served:
            response = await served.http.request(method, path, **kwargs)
            seen = served.servicer.requests[-1] if served.servicer.requests else None
            return response, seen

    return run(call())


def test_body_star_binds_the_whole_message() -> None:
    response, seen = rest("POST", "/v1/things:echo", json={"name": "a", "size": "9"})
    assert response.status_code == 200
    assert seen == pb.Thing(name="a", size=9)


def test_double_star_variable_captures_several_segments() -> None:
    response, seen = rest("GET", "/v1/shelves/s1/things/a/b/c")
    assert response.status_code == 200
    assert seen.name == "shelves/s1/things/a/b/c"


def test_additional_binding_with_nested_path_field() -> None:
    response, seen = rest("GET", "/v1/kinds/books/things/t1")
    assert response.status_code == 200
    assert seen == pb.GetThingRequest(name="t1", filter=pb.Filter(kind="books"))


def test_body_field_with_nested_path_variable_which_wins() -> None:
    response, seen = rest(
        "PATCH",
        "/v1/shelves/s1/things/t1",
        json={"name": "ignored", "displayName": "T"},
        params={"update_mask": "displayName"},
    )
    assert response.status_code == 200
    assert seen.thing == pb.Thing(name="shelves/s1/things/t1", display_name="T")
    assert list(seen.update_mask.paths) == ["display_name"]
    assert response.json()["name"] == "shelves/s1/things/t1"


def test_no_body_binding_and_empty_reply() -> None:
    response, seen = rest("DELETE", "/v1/shelves/s1/things/t1")
    assert (response.status_code, response.json()) == (200, {})
    assert seen == pb.DeleteThingRequest(name="shelves/s1/things/t1")


def test_custom_verb() -> None:
    response, seen = rest("POST", "/v1/shelves/s1/things/t1:cancel", json={"reason": "late"})
    assert response.status_code == 200
    assert seen == pb.CancelThingRequest(name="shelves/s1/things/t1", reason="late")


def test_response_body_answers_only_that_field() -> None:
    response, _ = rest("GET", "/v1/shelves/s1/things/t1:view")
    assert response.status_code == 200
    assert response.json()["name"] == "shelves/s1/things/t1"
    assert response.json()["size"] == "7"
    assert "etag" not in response.json()


def test_canonical_route_takes_the_whole_message() -> None:
    response, seen = rest(
        "POST", "/portico.test.v1.Shelf/GetThing", json={"name": "x", "full": True}
    )
    assert response.status_code == 200
    assert seen == pb.GetThingRequest(name="x", full=True)


def test_percent_encoded_path_variable_is_decoded() -> None:
    _, seen = rest("GET", "/v1/kinds/a%20b/things/t%3A1")
    assert seen.filter.kind == "a b"
    assert seen.name == "t:1"


def test_an_encoded_slash_stays_encoded_only_in_a_variable_of_several_segments() -> None:
    # google.api.http: multi-segment variables keep %2F (reserved expansion), single ones decode.
    _, seen = rest("GET", "/v1/shelves/s%2F1/things/t%2F1/x%20y")
    assert seen.name == "shelves/s%2F1/things/t%2F1/x y"
    _, seen = rest("GET", "/v1/kinds/a%2Fb/things/t%2F1")
    assert (seen.filter.kind, seen.name) == ("a/b", "t/1")


def test_query_parameters_bind_remaining_fields() -> None:
    query = [
        ("filter.minSize", "12"),
        ("filter.thing_kind", "2"),
        ("filter.kind", "café & co"),
        ("tags", "a"),
        ("tags", "b"),
        ("kind", "KIND_BOOK"),
        ("asOf", "2024-05-01T10:00:00Z"),
        ("max_age", "1.5s"),
        ("read_mask", "name,tags"),
        ("full", "true"),
        ("limit", "9007199254740993"),
        ("ratio", "0.5"),
        ("token", "aGk="),
        ("page_size", "20"),
        ("kinds", "KIND_DISC"),
        ("kinds", "1"),
    ]
    response, seen = rest("GET", "/v1/shelves/s1/things/t1", params=query)
    assert response.status_code == 200, response.text
    expected = pb.GetThingRequest(
        name="shelves/s1/things/t1",
        filter=pb.Filter(min_size=12, thing_kind=2, kind="café & co"),
        tags=["a", "b"],
        kind=1,
        full=True,
        limit=9007199254740993,
        ratio=0.5,
        token=b"hi",
        kinds=[2, 1],
    )
    expected.as_of.FromJsonString("2024-05-01T10:00:00Z")
    expected.max_age.FromJsonString("1.5s")
    expected.read_mask.paths.extend(["name", "tags"])
    expected.page_size.value = 20
    assert seen == expected


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"nope": "1"}, "nope"),
        ({"filter.nope": "1"}, "filter.nope"),
        ({"limit": "ten"}, "limit"),
        ({"kind": "KIND_NOPE"}, "kind"),
        ({"full": "maybe"}, "full"),
        ({"filter": "x"}, "filter"),
        ({"name": "other"}, "name"),
        ({"token": "!!"}, "token"),
        ([("limit", "1"), ("limit", "2")], "limit"),
        ([("filter.kind", "a"), ("filter.kind", "b")], "filter.kind"),
        ([("page_size", "1"), ("pageSize", "2")], "page_size"),
    ],
)
def test_bad_query_parameters_are_400_naming_the_field(query: Any, field: str) -> None:
    response, _ = rest("GET", "/v1/shelves/s1/things/t1", params=query)
    assert response.status_code == 400, response.text
    violations = response.json()["details"][0]["field_violations"]
    assert violations[0]["field"] == field


@pytest.mark.parametrize(
    "query",
    ["name=prod", "a=1&b=&c", "a=1=2&&b=x", "", "&", "n=%C3%A9t%C3%A9+x", "q=a+b", "k=\u00e9"],
)
def test_query_pairs_are_what_parse_qsl_reads(query: str) -> None:
    expected = parse_qsl(query, keep_blank_values=True, errors="strict")
    assert query_pairs(query) == expected


def test_unknown_query_parameters_can_be_ignored() -> None:
    options = GatewayOptions(json=JsonOptions(ignore_unknown=True), authenticate=NO_AUTH)
    response, seen = rest(
        "GET", "/v1/shelves/s1/things/t1", options, params={"nope": "1", "full": "1"}
    )
    assert response.status_code == 200
    assert seen.full


@pytest.mark.parametrize(
    ("method", "path", "status", "allow"),
    [
        ("GET", "/v2/nothing", 404, None),
        ("GET", "/v1/shelves/s1", 404, None),
        ("PUT", "/v1/shelves/s1/things/t1", 405, "DELETE, GET, PATCH"),
        ("GET", "/v1/things:echo", 405, "POST"),
        # (A GET of a method without side effects is Connect there: test_connect.py.)
        ("GET", "/portico.test.v1.Shelf/DeleteThing", 405, "POST"),
        ("POST", "/v1/things:nope", 404, None),
        ("POST", "/v1/shelves/s1/things/t1:nope", 405, "DELETE, GET, PATCH"),
    ],
)
def test_no_route_and_wrong_method(method: str, path: str, status: int, allow: str | None) -> None:
    response, _ = rest(method, path)
    assert response.status_code == status
    assert response.headers.get("allow") == allow
    assert response.json()["code"] in (5, 12)


def test_unsupported_content_type_is_415() -> None:
    response, seen = rest(
        "POST",
        "/v1/things:echo",
        content=b"name=a",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 415
    assert seen is None


def test_body_over_the_limit_is_413_before_the_servicer_runs() -> None:
    options = GatewayOptions(max_body_bytes=64, authenticate=NO_AUTH)
    response, seen = rest("POST", "/v1/things:echo", options, json={"name": "x" * 100})
    assert response.status_code == 413
    assert seen is None

    async def chunked() -> Any:
        async def body() -> Any:
            for _ in range(10):
                yield b'{"name":"xxxxxxxxxxxxxxxxxx'

        async with serving(options) as served:
            return await served.http.post("/v1/things:echo", content=body())

    assert run(chunked()).status_code == 413


def test_camel_case_output_option() -> None:
    options = GatewayOptions(json=JsonOptions(proto_names=False), authenticate=NO_AUTH)
    response, _ = rest("POST", "/v1/things:echo", options, json={"display_name": "d"})
    assert response.json()["displayName"] == "d"
    assert "display_name" not in response.json()


def test_request_headers_become_metadata_and_metadata_becomes_headers() -> None:
    headers = {
        "authorization": "Bearer t0k",
        "x-request-id": "rid-1",
        "grpc-metadata-tenant": "acme",
        "grpc-metadata-blob-bin": "AAE=",
        "grpc-timeout": "5S",
        "cookie": "not-forwarded",
    }
    response, _ = rest("POST", "/v1/context", json={}, headers=headers)
    report = response.json()
    assert report["metadata"] == {
        "authorization": "Bearer t0k",
        "x-request-id": "rid-1",
        "tenant": "acme",
        "blob-bin": "0001",
    }
    assert report["peer"] == "ipv4:203.0.113.7:40000"
    assert report["has_deadline"] and 4 < report["time_remaining"] <= 5
    assert response.headers["x-request-id"] == "rid-1"
    assert response.headers["grpc-metadata-x-initial"] == "yes"
    assert response.headers["grpc-metadata-x-trailing"] == "done"
    assert response.headers["grpc-metadata-x-blob-bin"] == "AAE="


def test_every_response_carries_a_request_id() -> None:
    for method, path in [("POST", "/v1/context"), ("GET", "/nope"), ("POST", "/v1/fail")]:
        response, _ = rest(method, path, json={})
        assert len(response.headers["x-request-id"]) == 32


def test_bad_metadata_headers_are_400() -> None:
    for header in ({"grpc-timeout": "soon"}, {"grpc-metadata-x-bin": "!!!"}):
        response, _ = rest("POST", "/v1/context", json={}, headers=header)
        assert response.status_code == 400


def test_authenticate_hook_guards_both_transports() -> None:
    async def authenticate(method: Any, metadata: Any, peer: Any) -> str:
        if ("authorization", "Bearer good") not in metadata:
            raise GatewayError(grpc.StatusCode.UNAUTHENTICATED, "a bearer token is required")
        return "alice"

    async def check() -> None:
        async with serving(GatewayOptions(authenticate=authenticate)) as served:
            refused = await served.http.post("/v1/things:echo", json={})
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"] == "Bearer"
            ok = await served.http.post(
                "/v1/things:echo", json={}, headers={"authorization": "Bearer good"}
            )
            assert ok.status_code == 200
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await served.stub.EchoThing(pb.Thing())
            assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
            await served.stub.EchoThing(pb.Thing(), metadata=[("authorization", "Bearer good")])

    run(check())


def test_health_and_readiness() -> None:
    response, _ = rest("GET", "/healthz")
    assert response.json() == {"status": "ok"}
    response, _ = rest("GET", "/readyz")
    assert response.status_code == 200


def test_cors_preflight_on_rpc_routes() -> None:
    options = GatewayOptions(cors_origins=("https://dash.example",), authenticate=NO_AUTH)
    headers = {"origin": "https://dash.example", "access-control-request-method": "PATCH"}
    response, _ = rest("OPTIONS", "/v1/shelves/s1/things/t1", options, headers=headers)
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "https://dash.example"
    response, _ = rest(
        "POST", "/v1/things:echo", options, json={}, headers={"origin": "https://dash.example"}
    )
    assert response.headers["access-control-allow-origin"] == "https://dash.example"
    assert "x-request-id" in response.headers["access-control-expose-headers"]


DIFFERENTIAL = [
    (
        "EchoThing",
        "POST",
        "/v1/things:echo",
        {"json": {"name": "a", "size": "-3", "labels": {"k": "v"}, "part": {"id": "p"}}},
    ),
    ("GetThing", "GET", "/v1/shelves/s/things/t", {"params": {"kind": "KIND_DISC", "tags": ["x"]}}),
    ("DeleteThing", "DELETE", "/v1/shelves/s/things/missing", {}),
    ("Fail", "POST", "/v1/fail", {"json": {"code": 9, "message": "not now", "rich": True}}),
    ("Fail", "POST", "/v1/fail", {"json": {"code": 10, "message": "conflict"}}),
    ("ViewThing", "GET", "/v1/shelves/s/things/t:view", {}),
]


@pytest.mark.parametrize(
    ("rpc", "method", "path", "kwargs"),
    DIFFERENTIAL,
    ids=[f"{d[0]}-{i}" for i, d in enumerate(DIFFERENTIAL)],
)
def test_rest_and_grpc_agree(rpc: str, method: str, path: str, kwargs: dict[str, Any]) -> None:
    """The same call over both transports: same reply, or same status and details."""

    async def check() -> None:
        async with serving() as served:
            response = await served.http.request(method, path, **kwargs)
            request = (
                served.servicer.requests[-1] if rpc != "Fail" else pb.FailRequest(**kwargs["json"])
            )
            try:
                reply = await getattr(served.stub, rpc)(request)
            except grpc.aio.AioRpcError as exc:
                status = rpc_status_of(exc)
                assert response.status_code == GatewayError(exc.code(), "").http_status
                assert response.json() == status.status_dict()
                return
            assert response.status_code == 200
            plan_field = "thing" if rpc == "ViewThing" else None
            value = json_format.MessageToDict(
                getattr(reply, plan_field) if plan_field else reply,
                preserving_proto_field_name=True,
                always_print_fields_with_no_presence=True,
            )
            assert response.json() == value

    run(check())


def rpc_status_of(exc: grpc.aio.AioRpcError) -> GatewayError:
    from grpc_status import rpc_status

    status = rpc_status.from_call(exc)
    if status is None:
        return GatewayError(exc.code(), exc.details() or "")
    return GatewayError.from_status(status)


def test_remembered_renderings_never_answer_for_a_different_reply() -> None:
    async def call() -> list[Any]:
        async with serving() as served:
            bodies = []
            for thing in ({"name": "a"}, {"name": "b"}, {"name": "a", "size": "2"}, {"name": "a"}):
                response = await served.http.post("/v1/things:echo", json=thing)
                bodies.append(response.json())
            return bodies

    first, second, third, again = run(call())
    assert (first["name"], second["name"]) == ("a", "b")
    assert third["size"] == "2" and first["size"] == "0"
    assert again == first
