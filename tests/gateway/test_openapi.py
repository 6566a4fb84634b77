"""The OpenAPI document of the test API: every HttpRule form, schema shape and streaming kind."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import google.api
import grpc_tools
import httpx
import pytest
from google.api import annotations_pb2, http_pb2
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_tools import protoc
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from app.gateway.admission import NO_AUTH
from app.gateway.codec.json_mapping import JsonOptions
from app.gateway.openapi.document import openapi_document
from app.gateway.openapi.proto_comments import source_comments
from app.gateway.openapi.rules import decimal_pattern
from app.gateway.registry import Method, Registry
from app.gateway.routes import GatewayOptions, create_app

from .conftest import run, shelf_registry
from .shelf import PROTO_FILE, PROTO_ROOT, SERVICE, ShelfServicer

SCHEMAS = "#/components/schemas/"


def _is_echo(method: Method) -> bool:
    return method.name == "EchoThing"


@pytest.fixture(scope="module")
def descriptor_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test proto compiled with source info, for descriptions."""
    out = tmp_path_factory.mktemp("descriptors") / "shelf.binpb"
    includes = [
        str(PROTO_ROOT),
        str(Path(grpc_tools.__file__).parent / "_proto"),
        str(Path(next(iter(google.api.__path__))).parent.parent),
    ]
    args = ["protoc", *(f"-I{i}" for i in includes), f"--descriptor_set_out={out}"]
    assert protoc.main([*args, "--include_source_info", PROTO_FILE]) == 0
    return out


@pytest.fixture(scope="module")
def doc(descriptor_set: Path) -> dict[str, Any]:
    document = openapi_document(
        shelf_registry(),
        JsonOptions(),
        title="Shelf",
        version="1.2.3",
        public_methods=_is_echo,
        descriptor_set=descriptor_set,
    )
    return document


def _operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for item in document["paths"].values() for op in item.values()]


def _params(operation: dict[str, Any], where: str) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in operation.get("parameters", []) if p["in"] == where}


def _schema(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return doc["components"]["schemas"][name]


def _body_schema(operation: dict[str, Any], content_type: str = "application/json") -> Any:
    return operation["requestBody"]["content"][content_type]["schema"]


def _reply_schema(operation: dict[str, Any], content_type: str = "application/json") -> Any:
    return operation["responses"]["200"]["content"][content_type]["schema"]


def test_the_document_validates_as_openapi_3_1(doc):
    assert doc["openapi"] == "3.1.0"
    assert doc["info"] == {**doc["info"], "title": "Shelf", "version": "1.2.3"}
    validate(doc, cls=OpenAPIV31SpecValidator)


def test_every_binding_and_canonical_route_is_an_operation_with_a_unique_id(doc):
    registry = shelf_registry()
    operations = _operations(doc)
    assert len(operations) == sum(len(m.http) + 1 for m in registry)
    ids = [op["operationId"] for op in operations]
    assert len(ids) == len(set(ids))
    get_thing = [op["operationId"] for op in operations if op["x-portico-rpc"].endswith("GetThing")]
    assert get_thing == ["Shelf_GetThing", "Shelf_GetThing_2", "Shelf_GetThing_Canonical"]
    assert {op["tags"][0] for op in operations} == {SERVICE}


def test_the_document_is_deterministic(doc, descriptor_set):
    again = openapi_document(
        shelf_registry(),
        JsonOptions(),
        title="Shelf",
        version="1.2.3",
        public_methods=_is_echo,
        descriptor_set=descriptor_set.read_bytes(),
    )
    assert again == doc


def test_a_multi_segment_variable_is_one_path_parameter_with_a_pattern(doc):
    operation = doc["paths"]["/v1/{name}"]["get"]
    name = _params(operation, "path")["name"]
    assert name["required"] is True
    pattern = name["schema"]["pattern"]
    assert pattern == "^shelves/[^/]+/things(?:/.*)?$"
    assert re.match(pattern, "shelves/1/things/a/b")
    assert not re.match(pattern, "racks/1/things/a")
    assert "unescaped" in name["description"]


def test_nested_path_variables_and_query_parameters_for_the_rest(doc):
    operation = doc["paths"]["/v1/kinds/{filter.kind}/things/{name}"]["get"]
    assert operation["operationId"] == "Shelf_GetThing_2"
    path = _params(operation, "path")
    assert set(path) == {"filter.kind", "name"}
    assert "pattern" not in path["name"]["schema"]  # a single `*` needs none
    query = _params(operation, "query")
    assert "filter.kind" not in query and "name" not in query
    assert query["filter.min_size"]["schema"] == {
        "type": "string",
        "format": "int64",
        "pattern": decimal_pattern(-(2**63), 2**63 - 1),
    }
    assert query["filter.thing_kind"]["schema"] == {"$ref": SCHEMAS + "portico.test.v1.Thing.Kind"}
    # A request's list holds at most the gateway's cap on repeated elements.
    assert query["tags"]["schema"] == {
        "type": "array",
        "items": {"type": "string"},
        "maxItems": 1000,
    }
    assert query["tags"]["explode"] is True
    assert query["as_of"]["schema"] == {"type": "string", "format": "date-time"}
    assert query["page_size"]["schema"] == {
        "type": "integer",
        "format": "int32",
        "minimum": -(2**31),
        "maximum": 2**31 - 1,
    }
    assert query["token"]["schema"] == {"type": "string", "format": "byte"}
    assert "requestBody" not in operation


def test_get_binding_takes_every_unbound_field_as_a_query_parameter(doc):
    operation = doc["paths"]["/v1/{name}"]["get"]
    query = _params(operation, "query")
    assert set(query) == {
        "filter.kind",
        "filter.min_size",
        "filter.thing_kind",
        "tags",
        "kind",
        "as_of",
        "max_age",
        "read_mask",
        "full",
        "limit",
        "ratio",
        "token",
        "page_size",
        "kinds",
    }
    assert query["kinds"]["schema"]["items"] == {"$ref": SCHEMAS + "portico.test.v1.Thing.Kind"}


def test_body_field_binding_sends_that_field_and_the_rest_as_query(doc):
    # `/v1/{thing.name=...}` has the same shape as GetThing's `/v1/{name}`: OpenAPI allows one.
    operation = doc["paths"]["/v1/{name}"]["patch"]
    assert operation["x-portico-rpc"] == f"{SERVICE}.UpdateThing"
    path = _params(operation, "path")["name"]
    assert path["description"].startswith("Sets `thing.name`.")
    assert path["schema"]["pattern"] == "^shelves/[^/]+/things/[^/]+$"
    assert _body_schema(operation) == {"$ref": SCHEMAS + "portico.test.v1.Thing.Input"}
    assert set(_params(operation, "query")) == {"update_mask"}


def test_a_request_reads_null_as_unset_and_bounds_lists_where_a_reply_does_neither(doc):
    """proto3 JSON (json_format) reads ``null`` as the unset field, and the gateway refuses a
    request list over its cap: a message a request and a reply share gets a request component
    of its own saying both, and the reply's stays plain (no null for clients to handle)."""
    schemas = doc["components"]["schemas"]
    reply, request = schemas["portico.test.v1.Thing"], schemas["portico.test.v1.Thing.Input"]
    assert reply["properties"]["display_name"] == {"type": "string"}
    assert request["properties"]["display_name"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}]
    }
    assert reply["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert request["properties"]["tags"]["anyOf"][0] == {
        "type": "array",
        "items": {"type": "string"},
        "maxItems": 1000,
    }
    assert request["properties"]["labels"]["anyOf"][0]["maxProperties"] == 1000
    # A nested message is its request form too; the reply's refers to the reply's.
    assert request["properties"]["parts"]["anyOf"][0]["items"] == {
        "$ref": SCHEMAS + "portico.test.v1.Thing.Part.Input"
    }
    assert reply["properties"]["parts"]["items"] == {"$ref": SCHEMAS + "portico.test.v1.Thing.Part"}
    # A message only requests hold has one component, under its own name.
    assert "portico.test.v1.ListThingsRequest.Input" not in schemas
    listed = schemas["portico.test.v1.ListThingsRequest"]
    assert {"type": "null"} in listed["properties"]["parent"]["anyOf"]


def test_delete_binding_has_no_body(doc):
    operation = doc["paths"]["/v1/{name}"]["delete"]
    assert "requestBody" not in operation
    assert _reply_schema(operation) == {"type": "object"}  # google.protobuf.Empty


def test_star_body_with_path_fields_is_the_message_without_them(doc):
    operation = doc["paths"]["/v1/{name}:cancel"]["post"]
    body = _body_schema(operation)
    assert body["type"] == "object"
    assert set(body["properties"]) == {"reason"}
    assert "parameters" not in operation or not _params(operation, "query")


def test_star_body_without_path_fields_references_the_message(doc):
    operation = doc["paths"]["/v1/things:echo"]["post"]
    assert _body_schema(operation) == {"$ref": SCHEMAS + "portico.test.v1.Thing.Input"}
    # Nothing in the path or query: only the headers of idempotency and conditional requests.
    assert [(p["name"], p["in"]) for p in operation["parameters"]] == [
        ("Idempotency-Key", "header"),
        ("If-None-Match", "header"),
        ("If-Match", "header"),
    ]


def test_mutating_operations_and_only_they_take_an_idempotency_key(doc):
    keyed = {
        operation["operationId"]
        for operation in _operations(doc)
        if "Idempotency-Key" in _params(operation, "header")
    }
    assert "Shelf_EchoThing" in keyed  # unary, POST
    viewed = doc["paths"]["/v1/{name}:view"]["get"]
    assert "Idempotency-Key" not in _params(viewed, "header")  # a GET binding
    for operation in _operations(doc):
        if operation["operationId"] in keyed:
            assert "(unary)" in operation["description"]


def test_response_body_answers_that_field(doc):
    operation = doc["paths"]["/v1/{name}:view"]["get"]
    assert _reply_schema(operation) == {"$ref": SCHEMAS + "portico.test.v1.Thing"}


def test_canonical_route_takes_the_whole_request(doc):
    operation = doc["paths"][f"/{SERVICE}/GetThing"]["post"]
    assert operation["operationId"] == "Shelf_GetThing_Canonical"
    assert [p["name"] for p in operation["parameters"]] == ["If-None-Match", "If-Match"]
    assert _body_schema(operation) == {"$ref": SCHEMAS + "portico.test.v1.GetThingRequest"}
    assert _reply_schema(operation) == {"$ref": SCHEMAS + "portico.test.v1.Thing"}


def test_field_schemas_follow_the_proto3_json_mapping(doc):
    thing = _schema(doc, "portico.test.v1.Thing")["properties"]
    # The patterns say the range: json_format refuses what does not fit in 64 bits.
    int64 = {"type": "string", "format": "int64", "pattern": decimal_pattern(-(2**63), 2**63 - 1)}
    assert thing["size"] == int64
    uint64 = {"type": "string", "format": "uint64", "pattern": decimal_pattern(0, 2**64 - 1)}
    assert thing["serial"] == uint64
    assert re.match(int64["pattern"], "-9223372036854775808")
    assert not re.match(int64["pattern"], "9223372036854775808")
    assert not re.match(uint64["pattern"], "-1")
    assert thing["count"] == {
        "type": "integer",
        "format": "int32",
        "minimum": -(2**31),
        "maximum": 2**31 - 1,
    }
    # proto3 JSON writes (and reads) the non-finite doubles as strings.
    assert thing["weight"] == {
        "oneOf": [
            {"type": "number", "format": "double"},
            {"type": "string", "enum": ["NaN", "Infinity", "-Infinity"]},
        ]
    }
    assert thing["active"] == {"type": "boolean"}
    assert thing["payload"] == {"type": "string", "format": "byte"}
    assert thing["kind"] == {"$ref": SCHEMAS + "portico.test.v1.Thing.Kind"}
    assert thing["tags"] == {"type": "array", "items": {"type": "string"}}
    assert thing["labels"] == {"type": "object", "additionalProperties": {"type": "string"}}
    assert thing["sizes"] == {"type": "object", "additionalProperties": int64}
    assert thing["parts"] == {
        "type": "array",
        "items": {"$ref": SCHEMAS + "portico.test.v1.Thing.Part"},
    }
    assert thing["numbers"] == {"type": "array", "items": int64}
    # Names, or the numbers the enum defines (unknown input is refused, unknown numbers too).
    names, number = _schema(doc, "portico.test.v1.Thing.Kind")["anyOf"]
    assert names == {"type": "string", "enum": ["KIND_UNSPECIFIED", "KIND_BOOK", "KIND_DISC"]}
    assert number == {"type": "integer", "enum": [0, 1, 2]}
    # Unknown fields are refused, and the document says so.
    assert _schema(doc, "portico.test.v1.Thing")["additionalProperties"] is False


def test_well_known_types_have_their_json_forms(doc):
    thing = _schema(doc, "portico.test.v1.Thing")["properties"]
    assert thing["create_time"] == {"type": "string", "format": "date-time"}
    assert thing["ttl"]["type"] == "string"
    assert re.match(thing["ttl"]["pattern"], "1.5s")
    assert thing["mask"]["type"] == "string"
    assert thing["attributes"] == {"type": "object", "additionalProperties": True}
    assert thing["limit"]["pattern"] == decimal_pattern(-(2**63), 2**63 - 1)
    assert thing["note"] == {"type": "string"}
    assert thing["flag"] == {"type": "boolean"}
    details = _schema(doc, "google.rpc.Status")["properties"]["details"]
    assert details["items"]["properties"]["@type"] == {"type": "string"}
    assert details["items"]["required"] == ["@type"]


def test_oneofs_are_documented(doc):
    thing = _schema(doc, "portico.test.v1.Thing")
    assert "Oneof `origin`: at most one of `url`, `part`." in thing["description"]
    url = thing["properties"]["url"]
    assert url["type"] == "string"
    assert "oneof `origin`" in url["description"]
    assert thing["properties"]["part"]["$ref"] == SCHEMAS + "portico.test.v1.Thing.Part"


def test_descriptions_come_from_the_proto_comments(doc, descriptor_set):
    assert _schema(doc, "portico.test.v1.Thing")["description"].startswith("Everything a field")
    assert _schema(doc, "portico.test.v1.Thing.Kind")["description"] == "What a thing is."
    code = _schema(doc, "portico.test.v1.FailRequest")["properties"]["code"]
    assert code["description"] == "A google.rpc.Code number."
    assert doc["tags"] == [{"name": SERVICE, "description": "Things on shelves."}]
    echo = doc["paths"]["/v1/things:echo"]["post"]
    assert echo["summary"] == "Echoes a thing back: every field type through the codec."
    query = _params(doc["paths"]["/v1/{parent}/things"]["get"], "query")
    assert query["fail"]["description"].startswith("Abort with FAILED_PRECONDITION")
    comments = source_comments(descriptor_set)
    assert comments[f"{SERVICE}.ListThings"].startswith("Streams `count` things")


def test_without_source_info_there_are_no_descriptions_but_the_same_shapes(doc):
    bare = openapi_document(
        shelf_registry(), JsonOptions(), title="Shelf", version="1", public_methods=_is_echo
    )
    thing = _schema(bare, "portico.test.v1.Thing")
    assert thing["description"] == "Oneof `origin`: at most one of `url`, `part`."
    assert set(bare["paths"]) == set(doc["paths"])
    assert bare["paths"]["/v1/things:echo"]["post"]["summary"] == f"{SERVICE}.EchoThing"


def test_field_names_follow_the_json_options():
    camel = openapi_document(
        shelf_registry(),
        JsonOptions(proto_names=False),
        title="Shelf",
        version="1",
        public_methods=_is_echo,
    )
    thing = _schema(camel, "portico.test.v1.Thing")["properties"]
    assert "displayName" in thing and "display_name" not in thing
    assert "createTime" in thing
    query = _params(camel["paths"]["/v1/kinds/{filter.kind}/things/{name}"]["get"], "query")
    assert "filter.minSize" in query and "asOf" in query
    assert "unknown fields are refused with 400" in camel["info"]["description"]
    assert "lowerCamelCase" in camel["info"]["description"]


def test_server_stream_answers_ndjson_or_sse(doc):
    operation = doc["paths"]["/v1/{parent}/things"]["get"]
    content = operation["responses"]["200"]["content"]
    assert set(content) == {"application/x-ndjson", "text/event-stream"}
    # The body is text (what a generated function can return), each line's schema alongside:
    # a component a generated client reads each line with.
    ndjson = content["application/x-ndjson"]
    line = {"$ref": SCHEMAS + "portico.test.v1.Thing.StreamItem"}
    assert ndjson["schema"]["type"] == "string"
    assert ndjson["schema"]["contentSchema"] == ndjson["x-itemSchema"] == line
    item = _schema(doc, "portico.test.v1.Thing.StreamItem")
    assert item["properties"] == {
        "result": {"$ref": SCHEMAS + "portico.test.v1.Thing"},
        "error": {"$ref": SCHEMAS + "google.rpc.Status"},
    }
    assert (item["minProperties"], item["maxProperties"]) == (1, 1)
    # An event stream is text too; one event's data's JSON is the same line as NDJSON's.
    sse = content["text/event-stream"]
    assert sse["schema"]["type"] == "string"
    event = sse["x-itemSchema"]
    assert event["required"] == ["data"]
    assert event["properties"]["data"]["contentMediaType"] == "application/json"
    assert event["properties"]["data"]["contentSchema"] == line
    assert operation["x-portico-streaming"] == "server_streaming"
    assert _params(operation, "query")["count"]["schema"] == {
        "type": "integer",
        "format": "int32",
        "minimum": -(2**31),
        "maximum": 2**31 - 1,
    }


def test_client_stream_takes_an_ndjson_body(doc):
    operation = doc["paths"]["/v1/things:collect"]["post"]
    assert set(operation["requestBody"]["content"]) == {"application/x-ndjson"}
    assert _body_schema(operation, "application/x-ndjson") == {
        "$ref": SCHEMAS + "portico.test.v1.Thing.Input"
    }
    assert _reply_schema(operation) == {"$ref": SCHEMAS + "portico.test.v1.ThingSummary"}


def test_bidi_stream_is_ndjson_both_ways_and_mentions_the_websocket(doc):
    for path in ("/v1/things:chat", f"/{SERVICE}/ChatThings"):
        operation = doc["paths"][path]["post"]
        assert set(operation["requestBody"]["content"]) == {"application/x-ndjson"}
        assert "application/x-ndjson" in operation["responses"]["200"]["content"]
        assert "WebSocket" in operation["description"]


def test_errors_are_a_shared_status_response(doc):
    for operation in _operations(doc):
        for errors in ("4XX", "5XX"):
            assert operation["responses"][errors] == {"$ref": "#/components/responses/Error"}
    error = doc["components"]["responses"]["Error"]
    assert error["content"]["application/json"]["schema"] == {"$ref": SCHEMAS + "google.rpc.Status"}
    status = _schema(doc, "google.rpc.Status")["properties"]
    assert status["code"] == {
        "type": "integer",
        "format": "int32",
        "minimum": -(2**31),
        "maximum": 2**31 - 1,
    }
    assert status["message"] == {"type": "string"}


def test_bearer_security_on_everything_but_public_rpcs(doc):
    assert doc["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
    }
    for operation in _operations(doc):
        public = operation["x-portico-rpc"] == f"{SERVICE}.EchoThing"
        assert operation["security"] == ([] if public else [{"bearerAuth": []}])


def _colliding_registry() -> Registry:
    """A method with two GET bindings OpenAPI cannot tell apart by shape alone."""
    name = "portico/test/v1/openapi_collide.proto"
    pool = descriptor_pool.Default()
    try:
        return Registry([pool.FindFileByName(name)])
    except KeyError:
        pass
    file = descriptor_pb2.FileDescriptorProto(
        name=name, package="portico.test.collide", syntax="proto3"
    )
    file.dependency.append("google/api/annotations.proto")
    request = file.message_type.add(name="GetRequest")
    request.field.add(name="name", number=1, type=9, label=1)
    method = file.service.add(name="Books").method.add(
        name="GetBook",
        input_type=".portico.test.collide.GetRequest",
        output_type=".portico.test.collide.GetRequest",
    )
    rule = http_pb2.HttpRule(get="/v1/{name=shelves/*/books/*}")
    rule.additional_bindings.add(get="/v1/{name=publishers/*/books/*}")
    method.options.Extensions[annotations_pb2.http].CopyFrom(rule)
    return Registry([pool.AddSerializedFile(file.SerializeToString())])


def test_templates_that_differ_only_in_literals_spell_them_out():
    document = openapi_document(
        _colliding_registry(),
        JsonOptions(),
        title="Collide",
        version="1",
        public_methods=lambda m: False,
    )
    validate(document, cls=OpenAPIV31SpecValidator)
    assert set(document["paths"]) == {
        "/v1/{name}",
        "/v1/publishers/{name_1}/books/{name_2}",
        "/portico.test.collide.Books/GetBook",
    }
    expanded = document["paths"]["/v1/publishers/{name_1}/books/{name_2}"]["get"]
    assert [p["name"] for p in expanded["parameters"]] == ["name_1", "name_2", "If-None-Match"]
    assert expanded["operationId"] == "Books_GetBook_2"


# -- served by the app ----------------------------------------------------------------------------


async def _get(app: Any, path: str, headers: dict[str, str] | None = None) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://portico") as client:
        return await client.get(path, headers=headers)


def test_the_app_serves_the_document_it_was_given(doc):
    app = create_app(shelf_registry(), {}, GatewayOptions(openapi=doc, authenticate=NO_AUTH))
    response = run(_get(app, "/openapi.json"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == doc


def test_without_a_document_the_app_serves_one_from_its_registry_and_options():
    options = GatewayOptions(json=JsonOptions(proto_names=False), authenticate=NO_AUTH)
    app = create_app(shelf_registry(), {}, options)
    expected = openapi_document(
        shelf_registry(),
        options.json,
        title="Portico",
        version="0.0.0",
        public_methods=lambda m: True,  # nothing authenticates
    )
    assert run(_get(app, "/openapi.json")).json() == expected


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_page_loads_everything_from_this_server(page: str) -> None:
    app = create_app(shelf_registry(), {}, GatewayOptions(authenticate=NO_AUTH))
    response = run(_get(app, page))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in response.headers["content-security-policy"]
    assert "//" not in response.text  # no URL of another origin, no CDN
    references = re.findall(r'(?:src|href|spec-url)="([^"]+)"', response.text)
    for reference in references:  # relative, so a path prefix in front of Portico keeps working
        loaded = run(_get(app, "/" + reference))
        assert loaded.status_code == 200, reference
    assert 'url: "openapi.json"' in run(_get(app, "/docs/init.js")).text
    assert 'Redoc.init("openapi.json"' in run(_get(app, "/docs/redoc-init.js")).text
    bundle = run(_get(app, "/docs/redoc.js"))
    assert "Redoc" in bundle.text and "https://cdn.redoc.ly" not in bundle.text
    again = run(_get(app, "/docs/redoc.js", {"if-none-match": bundle.headers["etag"]}))
    assert again.status_code == 304
    slashed = run(_get(app, "/docs/"))  # where its relative links would miss
    assert (slashed.status_code, slashed.headers["location"]) == (308, "../docs")


_SAMPLES = {
    ("string", None): "x",
    ("string", "int64"): "5",
    ("string", "byte"): "AAAA",
    ("string", "date-time"): "2024-01-01T00:00:00Z",
    ("integer", "int32"): "3",
    ("number", "double"): "1.5",
    ("boolean", None): "true",
}


def _sample(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return "KIND_BOOK"
    if "oneOf" in schema:  # a double: a number, or NaN / Infinity / -Infinity
        return _sample(schema["oneOf"][0])
    if schema.get("type") == "array":
        return _sample(schema["items"])
    if schema.get("format") == "int64":
        return "5"
    if "pattern" in schema:
        return "1s"  # the only other patterned query type here is a Duration
    return _SAMPLES[schema.get("type"), schema.get("format")]


@pytest.mark.parametrize(
    ("path", "name"),
    [("/v1/{name}", "shelves/1/things/a/b"), ("/v1/kinds/{filter.kind}/things/{name}", "a")],
)
def test_the_router_accepts_every_documented_query_parameter(doc, path, name):
    operation = doc["paths"][path]["get"]
    query = {key: _sample(p["schema"]) for key, p in _params(operation, "query").items()}
    url = path.replace("{name}", name).replace("{filter.kind}", "k")
    servicer = ShelfServicer()
    app = create_app(shelf_registry(), {SERVICE: servicer}, GatewayOptions(authenticate=NO_AUTH))

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://portico") as client:
            return await client.get(url, params=query)

    response = run(get())
    assert response.status_code == 200, response.text
    assert servicer.requests[0].name == name
    assert servicer.requests[0].tags == ["x"]


def test_a_body_is_optional_because_the_router_reads_none_as_the_empty_message(doc):
    operation = doc["paths"]["/v1/things:echo"]["post"]
    assert operation["requestBody"]["required"] is False
    servicer = ShelfServicer()
    app = create_app(shelf_registry(), {SERVICE: servicer}, GatewayOptions(authenticate=NO_AUTH))

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://portico") as client:
            return await client.post("/v1/things:echo")

    response = run(post())
    assert response.status_code == 200, response.text


def test_the_document_names_its_server_and_describes_every_tag(doc):
    assert doc["servers"] == [{"url": "/", "description": "The server that serves this document."}]
    assert all(tag["description"] for tag in doc["tags"])


def test_conditional_requests_are_documented(doc):
    get = doc["paths"]["/v1/{name}"]["get"]
    assert "If-None-Match" in _params(get, "header")
    assert "If-Match" not in _params(get, "header")
    assert get["responses"]["200"]["headers"]["ETag"] == {"$ref": "#/components/headers/ETag"}
    assert get["responses"]["304"] == {"$ref": "#/components/responses/NotModified"}
    echo = doc["paths"]["/v1/things:echo"]["post"]
    assert "If-Match" in _params(echo, "header")
    assert echo["responses"]["412"]["content"]["application/json"]
    assert "ETag" in doc["components"]["headers"]


def test_rate_limits_are_documented_as_429_with_retry_after(doc):
    for operation in (doc["paths"]["/v1/{name}"]["get"], doc["paths"]["/v1/things:echo"]["post"]):
        assert operation["responses"]["429"] == {"$ref": "#/components/responses/TooManyRequests"}
    too_many = doc["components"]["responses"]["TooManyRequests"]
    assert too_many["headers"]["Retry-After"] == {"$ref": "#/components/headers/Retry-After"}
    assert too_many["content"]["application/json"]["schema"]["$ref"].endswith("google.rpc.Status")
    assert doc["components"]["headers"]["Retry-After"]["schema"]["type"] == "integer"
