"""The committed openapi.yaml is what `portico gen` writes today, covers every RPC and validates."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import pytest
import yaml
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from app import __version__, catalog
from app.cli import codegen
from app.cli.commands import main as portico
from app.gateway.admission import NO_AUTH
from app.gateway.registry import Registry
from app.gateway.routes import GatewayOptions, create_app

pytestmark = pytest.mark.slow  # seconds per test: scheduled first (tests/conftest.py)


@pytest.fixture(scope="module")
def committed() -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, where PyYAML has it
    return yaml.load(codegen.OPENAPI.read_text(), Loader=loader)


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path, verb, operation)
        for path, item in document["paths"].items()
        for verb, operation in item.items()
    ]


def test_openapi_yaml_is_in_sync_with_the_descriptors():
    fresh = codegen.openapi_yaml(catalog.portico_openapi())
    assert codegen.OPENAPI.read_text() == fresh, "openapi.yaml is stale; run `portico gen`"


def test_portico_openapi_prints_the_same_document(capsys):
    portico(["openapi", "-"])
    assert capsys.readouterr().out == codegen.OPENAPI.read_text()


def test_portico_openapi_writes_a_file(tmp_path):
    target = tmp_path / "openapi.yaml"
    portico(["openapi", str(target)])
    assert target.read_text() == codegen.OPENAPI.read_text()


def test_openapi_yaml_validates_as_openapi_3_1(committed):
    validate(committed, cls=OpenAPIV31SpecValidator)
    assert committed["openapi"] == "3.1.0"
    assert committed["info"]["title"] == "Portico"
    assert committed["info"]["version"] == __version__


def test_every_rpc_and_every_readme_route_is_an_operation(committed):
    registry = Registry.from_package("gen")
    rpcs = {op["x-portico-rpc"] for _, _, op in _operations(committed)}
    assert rpcs == {m.full_name for m in registry}
    assert len(rpcs) == 80
    rows = codegen.rpc_table(registry).splitlines()[2:]
    for row in rows:
        rpc, _, _, routes = (cell.strip() for cell in row.strip("|").split("|"))
        for route in re.findall(r"`([A-Z]+) ([^`]+)`", routes):
            verb, template = route
            path = re.sub(r"\{([^}=]+)=[^}]*\}", r"{\1}", template)
            operation = committed["paths"][path][verb.lower()]
            assert operation["x-portico-rpc"] == rpc, f"{verb} {template}"


def test_operation_ids_are_unique(committed):
    ids = [op["operationId"] for _, _, op in _operations(committed)]
    assert len(ids) == len(set(ids))
    create = committed["paths"]["/api/v1/cluster"]["post"]
    assert create["operationId"] == "Cluster_CreateCluster"
    canonical = committed["paths"]["/cnct.kaas.api.Cluster/CreateCluster"]["post"]
    assert canonical["operationId"] == "Cluster_CreateCluster_Canonical"


def test_only_login_and_check_token_are_public(committed):
    public = {op["x-portico-rpc"] for _, _, op in _operations(committed) if op["security"] == []}
    assert public == {"services.auth.AuthService.Login", "services.auth.AuthService.CheckToken"}
    secured = [op for _, _, op in _operations(committed) if op["security"]]
    assert all(op["security"] == [{"bearerAuth": []}] for op in secured)


def test_int64_fields_are_strings_and_comments_are_descriptions(committed):
    schemas = committed["components"]["schemas"]
    logs = committed["paths"]["/v1/runtime/pods/{pod_id}/logs"]["get"]
    since = next(p for p in logs["parameters"] if p["name"] == "since_time")
    schema = since["schema"]
    assert (schema["type"], schema["format"]) == ("string", "int64")
    # The pattern says the server's rule too (app.rules.field_rules: not negative) and int64's
    # range.
    accepted = [v for v in ("0", "42", "9223372036854775807") if re.match(schema["pattern"], v)]
    refused = [v for v in ("", "-1", "+4", "9223372036854775808") if re.match(schema["pattern"], v)]
    assert (len(accepted), refused) == (3, [])
    assert since["description"]
    assert "text/event-stream" in logs["responses"]["200"]["content"]
    assert "google.rpc.Status" in schemas


def test_the_served_document_is_the_committed_one(committed):
    registry = Registry.from_package("gen")
    app = create_app(
        registry,
        {},
        GatewayOptions(openapi=catalog.portico_openapi(registry), authenticate=NO_AUTH),
    )

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://portico") as client:
            return await client.get("/openapi.json")

    assert asyncio.run(get()).json() == committed


def test_the_correct_route_has_the_methods_name_and_the_misspelled_one_a_suffix(committed):
    paths = committed["paths"]
    assert paths["/delete/cloudlet"]["post"]["operationId"] == "CloudletApi_DeleteCloudlet"
    assert paths["/delete/cloudet"]["post"]["operationId"] == "CloudletApi_DeleteCloudlet_2"
