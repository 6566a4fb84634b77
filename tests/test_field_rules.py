"""The field rules: each API's book, combined, the servicers enforce and the OpenAPI document
publishes."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import grpc
import pytest

from app import catalog
from app.catalog import portico_openapi
from app.rules.field_checks import FieldChecks
from app.rules.field_rule import Rule
from app.rules.rule_book import RuleBook
from gen.cnct.kaas.api import api_pb2 as kaas
from gen.edgeproto import operator_pb2
from gen.scheduler import scheduler_pb2
from tests.harness import run, running

NAME = "cnct.kaas.api.GetClusterMsg.name"
FIELD_RULES = catalog.RULES.fields
violations = FieldChecks(catalog.RULES).violations


def _query_schema(document: dict, path: str, name: str) -> dict:
    parameters = document["paths"][path]["get"]["parameters"]
    return next(p for p in parameters if p["name"] == name)["schema"]


def test_a_changed_rule_changes_the_document_and_the_server_alike(tmp_path: Path, monkeypatch):
    """Both read the book: a rule changed there changes the schema and the refusal."""
    before = _query_schema(portico_openapi(), "/api/v1/cluster", "name")
    assert before["maxLength"] == 63
    changed = {**FIELD_RULES, NAME: dataclasses.replace(FIELD_RULES[NAME], max_length=5)}
    monkeypatch.setattr(catalog, "RULES", RuleBook(changed, catalog.RULES.calls))
    after = _query_schema(portico_openapi(), "/api/v1/cluster", "name")
    assert after["maxLength"] == 5

    async def get(name: str) -> tuple[int, list[str]]:
        async with running(tmp_path) as server:
            token = await server.login()
            headers = {"authorization": f"Bearer {token}"}
            reply = await server.http.get("/api/v1/cluster", params={"name": name}, headers=headers)
            fields = [
                v["field"]
                for d in reply.json().get("details", [])
                for v in d.get("field_violations", [])
            ]
            return reply.status_code, fields

    assert run(get("sixsix")) == (400, ["name"])  # over the changed rule's 5 characters
    assert run(get("five5"))[0] == 404  # within it: the cluster is just not there


def test_a_grpc_call_meets_the_same_rule(tmp_path: Path):
    async def call() -> grpc.aio.AioRpcError:
        async with running(tmp_path) as server:
            token = await server.login()
            method = server.channel.unary_unary(
                "/cnct.kaas.api.Cluster/GetCluster",
                request_serializer=kaas.GetClusterMsg.SerializeToString,
                response_deserializer=kaas.GetClusterReply.FromString,
            )
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await method(
                    kaas.GetClusterMsg(name="Not_A_Label"),
                    metadata=(("authorization", f"Bearer {token}"),),
                )
            return refused.value

    error = run(call())
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "name:" in (error.details() or "") and "lower case" in (error.details() or "")


def test_a_rule_applies_to_set_values_and_required_says_unset_is_wrong():
    # Unset (the zero value) passes a rule that is not required; set, it must match.
    assert violations(kaas.GetClusterMsg()) == []
    assert [f for f, _ in violations(kaas.GetClusterMsg(name="Bad"))] == ["name"]
    # The RPC's own rule makes it required.
    assert violations(kaas.GetClusterMsg(), "cnct.kaas.api.Cluster.GetCluster") == [
        ("name", "is required")
    ]


def test_call_rules_reach_through_repeated_fields_and_nested_keys():
    msg = kaas.CreateClusterMsg(
        name="a",
        k8s_version="1.31.2",
        control_plane_nodes=kaas.ControlPlaneMachineSpec(count=3, instanceType="gpu"),
        worker_node_pools=[kaas.MachineSpec(name="w", instanceType="gpu", count=0)],
    )
    found = violations(msg, "cnct.kaas.api.Cluster.CreateCluster")
    assert found == [("worker_node_pools[0].count", "must be between 1 and 100 (got 0)")]
    create = "edgeproto.OperatorApi.CreateOperator"
    assert violations(operator_pb2.Operator(), create) == [("key.name", "is required")]
    # A Show filter may leave the key out, but not misspell it.
    show = "edgeproto.OperatorApi.ShowOperator"
    assert violations(operator_pb2.Operator(), show) == []
    bad = operator_pb2.Operator(key=operator_pb2.OperatorKey(name="trailing "))
    assert [f for f, _ in violations(bad, show)] == ["key.name"]


def test_numbers_ranges_refuse_nan_and_lists_have_caps():
    instance = scheduler_pb2.Instance(
        name="web",
        ports=[scheduler_pb2.Port(source=0, destination=70000)],
        environnement=["1BAD=x"],
    )
    found = dict(violations(instance))
    assert found["ports[0].source"] == "must be between 1 and 65535 (got 0)"
    assert found["ports[0].destination"] == "must be between 1 and 65535 (got 70000)"
    assert "NAME=value" in found["environnement[0]"]
    assert Rule(minimum=-90, maximum=90).problem(float("nan")) is not None
    assert Rule(max_items=2).count_problem(3) == "at most 2 are allowed (got 3)"


def test_every_rule_names_a_field_that_exists_and_every_pattern_compiles():
    from google.protobuf import descriptor_pool

    import gen  # noqa: F401  (the generated modules register their descriptors)
    from app.gateway.registry import Registry

    Registry.from_package("gen")
    pool = descriptor_pool.Default()
    for name, rule in FIELD_RULES.items():
        message, _, field = name.rpartition(".")
        assert field in pool.FindMessageTypeByName(message).fields_by_name, name
        if rule.pattern is not None:
            re.compile(rule.pattern)
    for method, rules in catalog.RULES.calls.items():
        for path in rules:
            desc = pool.FindMethodByName(method).input_type
            for part in path.split("."):
                assert desc is not None and part in desc.fields_by_name, (method, path)
                desc = desc.fields_by_name[part].message_type
