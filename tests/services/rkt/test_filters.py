"""Every PodFilter and ImageFilter field rule, table-driven, plus AND within / OR across filters."""

from __future__ import annotations

import pytest

from app.services.rkt.filters import (
    event_matches,
    image_matches,
    pod_matches,
    select_images,
    select_pods,
)
from gen.v1alpha import api_pb2 as rkt

KV = rkt.KeyValue

POD = rkt.Pod(
    id="pod-1",
    state=rkt.POD_STATE_RUNNING,
    apps=[
        rkt.App(name="web", image=rkt.Image(id="sha512-aaa")),
        rkt.App(name="sidecar", image=rkt.Image(id="sha512-bbb")),
    ],
    networks=[rkt.Network(name="default"), rkt.Network(name="storage")],
    annotations=[KV(Key="team", value="edge"), KV(Key="tier", value="front")],
    cgroup="/machine.slice/pod-1",
)


@pytest.mark.parametrize(
    ("rule", "matching", "not_matching"),
    [
        ("ids: any of", rkt.PodFilter(ids=["x", "pod-1"]), rkt.PodFilter(ids=["x"])),
        (
            "states: any of",
            rkt.PodFilter(states=[rkt.POD_STATE_EXITED, rkt.POD_STATE_RUNNING]),
            rkt.PodFilter(states=[rkt.POD_STATE_EXITED]),
        ),
        (
            "app_names: all of",
            rkt.PodFilter(app_names=["web", "sidecar"]),
            rkt.PodFilter(app_names=["web", "db"]),
        ),
        (
            "image_ids: all of",
            rkt.PodFilter(image_ids=["sha512-aaa", "sha512-bbb"]),
            rkt.PodFilter(image_ids=["sha512-aaa", "sha512-ccc"]),
        ),
        (
            "network_names: all of",
            rkt.PodFilter(network_names=["default", "storage"]),
            rkt.PodFilter(network_names=["default", "dmz"]),
        ),
        (
            "annotations: all of, key and value",
            rkt.PodFilter(
                annotations=[KV(Key="team", value="edge"), KV(Key="tier", value="front")]
            ),
            rkt.PodFilter(annotations=[KV(Key="team", value="edge"), KV(Key="tier", value="back")]),
        ),
        (
            "cgroups: any of, exact",
            rkt.PodFilter(cgroups=["/other", "/machine.slice/pod-1"]),
            rkt.PodFilter(cgroups=["/machine.slice/pod"]),
        ),
        (
            "pod_sub_cgroups: the pod's cgroup is a prefix",
            rkt.PodFilter(pod_sub_cgroups=["/machine.slice/pod-1/web.service"]),
            rkt.PodFilter(pod_sub_cgroups=["/machine.slice/pod-2/web.service"]),
        ),
    ],
)
def test_pod_filter_field_rules(rule, matching, not_matching):
    assert pod_matches(POD, matching), rule
    assert not pod_matches(POD, not_matching), rule


def test_pod_without_cgroup_matches_no_sub_cgroup():
    pod = rkt.Pod(id="p")
    assert not pod_matches(pod, rkt.PodFilter(pod_sub_cgroups=["/machine.slice/x"]))


def test_conditions_in_one_pod_filter_are_anded_and_filters_are_ored():
    other = rkt.Pod(id="pod-2", state=rkt.POD_STATE_EXITED)
    both = rkt.PodFilter(ids=["pod-1"], states=[rkt.POD_STATE_EXITED])
    assert select_pods([POD, other], [both]) == []
    either = [rkt.PodFilter(ids=["pod-1"]), rkt.PodFilter(states=[rkt.POD_STATE_EXITED])]
    assert [p.id for p in select_pods([POD, other], either)] == ["pod-1", "pod-2"]
    assert [p.id for p in select_pods([POD, other], [])] == ["pod-1", "pod-2"]


IMAGE = rkt.Image(
    id="sha512-etcd",
    name="coreos.com/etcd",
    version="3.5",
    import_timestamp=1000,
    labels=[KV(Key="os", value="linux"), KV(Key="arch", value="amd64")],
    annotations=[KV(Key="source", value="quay")],
)


@pytest.mark.parametrize(
    ("rule", "matching", "not_matching"),
    [
        ("ids: any of", rkt.ImageFilter(ids=["x", "sha512-etcd"]), rkt.ImageFilter(ids=["x"])),
        (
            "prefixes: any of, on the name",
            rkt.ImageFilter(prefixes=["k8s.io/", "coreos.com/"]),
            rkt.ImageFilter(prefixes=["k8s.io/"]),
        ),
        (
            "base_names: the last path element",
            rkt.ImageFilter(base_names=["etcd"]),
            rkt.ImageFilter(base_names=["etc", "coreos.com"]),
        ),
        (
            "keywords: any substring of the name",
            rkt.ImageFilter(keywords=["nothing", "etc"]),
            rkt.ImageFilter(keywords=["kube"]),
        ),
        (
            "labels: all of",
            rkt.ImageFilter(labels=[KV(Key="os", value="linux"), KV(Key="arch", value="amd64")]),
            rkt.ImageFilter(labels=[KV(Key="os", value="linux"), KV(Key="arch", value="arm64")]),
        ),
        (
            "imported_after: strictly after",
            rkt.ImageFilter(imported_after=999),
            rkt.ImageFilter(imported_after=1000),
        ),
        (
            "imported_before: strictly before",
            rkt.ImageFilter(imported_before=1001),
            rkt.ImageFilter(imported_before=1000),
        ),
        (
            "annotations: all of",
            rkt.ImageFilter(annotations=[KV(Key="source", value="quay")]),
            rkt.ImageFilter(annotations=[KV(Key="source", value="docker")]),
        ),
        (
            "full_names: any of, exact",
            rkt.ImageFilter(full_names=["k8s.io/etcd", "coreos.com/etcd"]),
            rkt.ImageFilter(full_names=["coreos.com/etcd-backup"]),
        ),
    ],
)
def test_image_filter_field_rules(rule, matching, not_matching):
    assert image_matches(IMAGE, matching), rule
    assert not image_matches(IMAGE, not_matching), rule


def test_base_names_match_across_registries_but_not_longer_names():
    images = [
        rkt.Image(id="1", name="coreos.com/etcd"),
        rkt.Image(id="2", name="k8s.io/etcd"),
        rkt.Image(id="3", name="k8s.io/etcd-backup"),
    ]
    chosen = select_images(images, [rkt.ImageFilter(base_names=["etcd"])])
    assert [i.id for i in chosen] == ["1", "2"]


@pytest.mark.parametrize(
    ("event_filter", "expected"),
    [
        (rkt.EventFilter(), True),
        (rkt.EventFilter(types=[rkt.EVENT_TYPE_POD_STARTED]), True),
        (rkt.EventFilter(types=[rkt.EVENT_TYPE_POD_EXITED]), False),
        (rkt.EventFilter(ids=["pod-1"]), True),
        (rkt.EventFilter(ids=["pod-2"]), False),
        (rkt.EventFilter(names=["web"]), True),
        (rkt.EventFilter(names=["db"]), False),
        (rkt.EventFilter(since_time=100), True),
        (rkt.EventFilter(since_time=101), False),
        (rkt.EventFilter(until_time=101), True),
        (rkt.EventFilter(until_time=100), False),
    ],
)
def test_event_filter(event_filter, expected):
    event = rkt.Event(type=rkt.EVENT_TYPE_POD_STARTED, id="pod-1", time=100, **{"from": "web"})
    assert event_matches(event, event_filter) is expected
