"""CreateCluster validation: every rule of the cluster manager, each error naming its field."""

from __future__ import annotations

import pytest

from app.services.kaas.records import desired_machines, machine_count
from app.services.kaas.validation import check_create
from gen.cnct.kaas.api import api_pb2 as kaas

VERSIONS = ("1.30.6", "1.31.2")


def _request(**changes) -> kaas.CreateClusterMsg:
    msg = kaas.CreateClusterMsg(
        name="prod-1",
        k8s_version="1.31.2",
        control_plane_nodes=kaas.ControlPlaneMachineSpec(count=3, instanceType="standard"),
        worker_node_pools=[
            kaas.MachineSpec(
                name="workers",
                instanceType="gpu",
                count=2,
                labels=[kaas.KubernetesLabel(name="example.com/tier", value="batch")],
            )
        ],
    )
    for path, value in changes.items():
        target = msg
        *parents, last = path.split("__")
        for part in parents:
            target = target.worker_node_pools[0] if part == "pool" else getattr(target, part)
        if isinstance(value, list):
            del getattr(target, last)[:]
            getattr(target, last).extend(value)
        else:
            setattr(target, last, value)
    return msg


def test_a_good_request_has_no_violations():
    assert not check_create(_request(), VERSIONS)


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"name": ""}, "name", "required"),
        ({"name": "Prod_1"}, "name", "lower case"),
        ({"name": "a" * 64}, "name", "at most 63"),
        ({"k8s_version": "1.12.0"}, "k8s_version", "supported versions"),
        ({"control_plane_nodes__count": 2}, "control_plane_nodes.count", "1, 3 or 5"),
        ({"control_plane_nodes__instanceType": "xl"}, "control_plane_nodes.instanceType", "one of"),
        ({"worker_node_pools": []}, "worker_node_pools", "at least one"),
        ({"pool__name": "Bad"}, "worker_node_pools[0].name", "lower case"),
        ({"pool__count": 0}, "worker_node_pools[0].count", "between 1 and"),
        (
            {"pool__labels": [kaas.KubernetesLabel(name="bad key!", value="x")]},
            "worker_node_pools[0].labels[0].name",
            "label key",
        ),
        (
            {"pool__labels": [kaas.KubernetesLabel(name="ok", value="-bad-")]},
            "worker_node_pools[0].labels[0].value",
            "label value",
        ),
    ],
)
def test_each_rule_names_its_field(changes, field, words):
    found = check_create(_request(**changes), VERSIONS).found
    assert [v.field for v in found] == [field]
    assert words in found[0].description


def test_duplicate_pool_names_and_every_problem_at_once():
    msg = _request(name="", control_plane_nodes__count=4)
    msg.worker_node_pools.append(msg.worker_node_pools[0])
    fields = [v.field for v in check_create(msg, VERSIONS).found]
    assert fields == ["name", "control_plane_nodes.count", "worker_node_pools[1].name"]


@pytest.mark.parametrize(
    "pools",
    [
        [],
        [("a", 2), ("b", 5)],
        [("a", 2), ("a", 4)],  # refused by validation, still counted as the slots it names
        [("control-plane", 5)],
    ],
)
def test_the_machines_a_spec_asks_for_are_counted_as_they_are_built(pools):
    spec = _request(worker_node_pools=[kaas.MachineSpec(name=n, count=c) for n, c in pools])
    assert machine_count(spec) == len(desired_machines(spec))
