"""Rules that were only described are now said: the server and the document read one pattern.

An App's access ports, a Cloudlet's static IPs, an instance's image reference, an Update's
``fields``, a label key's prefix, pool names given once: each is a field rule whose regex (or
``uniqueItems``) the server checks before any servicer and the document publishes, so a value
either both accept or both refuse, and a refusal names the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest

from app.catalog import RULES, portico_openapi
from tests.harness import run, running


def _fields(reply: Any) -> list[str]:
    details = reply.json().get("details", [])
    return [v["field"] for d in details for v in d.get("field_violations", [])]


def _post_all(tmp_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[int, list]]:
    async def scenario() -> list[tuple[int, list]]:
        async with running(tmp_path) as server:
            token = await server.login()
            headers = {"authorization": f"Bearer {token}"}
            answers = []
            for path, body in calls:
                reply = await server.http.post(path, json=body, headers=headers)
                answers.append((reply.status_code, _fields(reply)))
            return answers

    return run(scenario())


APP = {"developer_key": {"name": "acme"}, "name": "web", "version": "1"}
LIMIT = {"cpu": 1, "memory": 1, "disk": 1}


def test_bad_values_are_refused_naming_the_field_and_never_fail_the_server(tmp_path: Path):
    answers = _post_all(
        tmp_path,
        [
            # A superscript two is a digit to str.isdigit() but not to int(): once a 500.
            ("/create/app", {"key": APP, "default_flavor": {"name": "f"}, "access_ports": "tcp:²"}),
            # Other scripts' digits and a final newline were accepted where the document refuses.
            ("/create/app", {"key": APP, "default_flavor": {"name": "f"}, "access_ports": "tcp:٣"}),
            (
                "/v1/scheduler/instances",
                {"name": "web", "uri": "nginx\n", "resource": {"limit": LIMIT}},
            ),
            # A zone index names a link on one host: no address a cloudlet offers.
            (
                "/create/cloudlet",
                {"key": {"operator_key": {"name": "o"}, "name": "c"}, "static_ips": "fe80::1%eth0"},
            ),
            ("/update/flavor", {"key": {"name": "f"}, "fields": ["key.name"]}),
            ("/update/flavor", {"key": {"name": "f"}, "fields": ["ram", " 3 ", "no_such"]}),
        ],
    )
    assert answers == [
        (400, ["access_ports"]),
        (400, ["access_ports"]),
        (400, ["uri"]),
        (400, ["static_ips"]),
        (400, ["fields[0]"]),
        (400, ["fields[2]"]),
    ]


def test_a_pool_named_twice_is_refused_at_its_second_mention(tmp_path: Path):
    async def scenario() -> tuple[int, list[str]]:
        async with running(tmp_path) as server:
            token = await server.login()
            reply = await server.http.request(
                "DELETE",
                "/api/v1/cluster/pool",
                params=[("clusterName", "c"), *(("node_pool_names", n) for n in "aba")],
                headers={"authorization": f"Bearer {token}"},
            )
            return reply.status_code, _fields(reply)

    assert run(scenario()) == (400, ["node_pool_names[2]"])
    parameters = portico_openapi()["paths"]["/api/v1/cluster/pool"]["delete"]["parameters"]
    names = next(p for p in parameters if p["name"] == "node_pool_names")
    assert names["schema"]["uniqueItems"] is True  # and the document says so


@pytest.fixture(scope="module")
def schemas() -> dict[str, Any]:
    document = portico_openapi()
    found = dict(document["components"]["schemas"])
    # A create's body is the message with the call's own rules merged in: no component.
    body = document["paths"]["/v1/scheduler/instances"]["post"]["requestBody"]
    found["scheduler.Instance"] = body["content"]["application/json"]["schema"]
    return found


@pytest.mark.parametrize(
    ("component", "field", "good", "bad"),
    [
        (
            "edgeproto.App",
            "access_ports",
            # Spaces around an item go, as str.strip() takes them (a newline is one).
            ["", "tcp:80", " TCP:0080 ,, http:65535 ", "tcp:80\n"],
            ["tcp:0", "tcp:65536", "tcp:²", "tcp:٣", "ftp:21", "tcp:80:90"],
        ),
        (
            "edgeproto.Cloudlet",
            "static_ips",
            ["", "192.0.2.1", "192.0.2.1, 2001:db8::1", "::ffff:192.0.2.1", "1:2:3:4:5:6:7::"],
            ["192.0.2.01", "256.0.0.1", "fe80::1%eth0", "1::2:3:4:5:6:7:8", "::1x"],
        ),
        (
            "scheduler.Instance",
            "uri",
            ["nginx", "docker://quay.io/coreos/etcd:v3.5", "oci://localhost:5000/a/b:t"],
            ["http://nginx", "Nginx", "nginx\n", "nginx:é"],
        ),
        (
            "cnct.kaas.api.KubernetesLabel",
            "name",
            ["app", "example.com/app", "a" * 253 + "/x"],
            ["a" * 254 + "/x", "-app", "app\n"],
        ),
    ],
)
def test_the_document_says_what_the_server_checks(
    schemas: dict[str, Any], component: str, field: str, good: list[str], bad: list[str]
):
    schema = schemas[component]["properties"][field]
    validator = jsonschema_rs.validator_for(schema)
    assert [value for value in good if not validator.is_valid(value)] == []
    assert [value for value in bad if validator.is_valid(value)] == []


def test_an_update_names_fields_the_document_lists_and_a_request_may_be_null(
    schemas: dict[str, Any],
):
    document = portico_openapi()
    body = document["paths"]["/update/app"]["post"]["requestBody"]["content"]["application/json"]
    validator = jsonschema_rs.validator_for(
        {**body["schema"], "components": document["components"]}
    )
    key = {"developer_key": {"name": "acme"}, "name": "web", "version": "1"}
    for fields in (["image_path"], ["4"], ["default_flavor.name"], ["9.1"], [" 0009.name "]):
        assert validator.is_valid({"key": key, "fields": fields}), fields
    for fields in ([], ["key"], ["2"], ["default_flavor.nope"], ["image_path.x"], ["4.1"]):
        assert not validator.is_valid({"key": key, "fields": fields}), fields
    # A field that is not required may be null (the unset field); the key it names may not.
    assert validator.is_valid({"key": key, "fields": ["4"], "image_path": None})
    assert not validator.is_valid({"key": None, "fields": ["4"]})
    assert not validator.is_valid({"key": {**key, "name": None}, "fields": ["4"]})


def test_a_final_newline_is_refused_as_the_document_refuses_it():
    """JSON Schema's `$` is the end of the text; Python's also matches before a final newline,
    which let a name such as "web\\n" through the server while the document refused it."""
    rule = RULES.fields["cnct.kaas.api.GetClusterMsg.name"]
    assert rule.problem("web") is None
    assert rule.problem("web\n") is not None
