"""The runtime view derived from instance records: pod states and the events of transitions."""

from __future__ import annotations

import pytest

from app.services.kudo.placement import Capacity
from app.services.kudo.records import InstanceRecord
from app.services.rkt.events import EventTranslator
from app.services.rkt.images import Detail
from app.services.rkt.pods import pod_of, pod_state
from gen.scheduler import scheduler_pb2 as pb
from gen.v1alpha import api_pb2 as rkt


def _instance(*path: int, uri: str = "nginx:1") -> InstanceRecord:
    record = InstanceRecord("id-1", "web", uri, (), ((8080, 80),), Capacity(1, 1, 1), 0)
    for step, status in enumerate(path):
        node = "" if status == pb.SCHEDULING else "n1"
        record = record.moved(status, "", at_ns=step * 10**9, step=step, node=node, ip="10.0.0.2")
    return record


PLACED = (pb.SCHEDULING, pb.SCHEDULED)
RUN = (*PLACED, pb.STARTING, pb.RUNNING)


@pytest.mark.parametrize(
    ("path", "state"),
    [
        (PLACED, rkt.POD_STATE_PREPARING),
        ((*PLACED, pb.STARTING), rkt.POD_STATE_PREPARED),
        (RUN, rkt.POD_STATE_RUNNING),
        ((*RUN, pb.STOPPING), rkt.POD_STATE_RUNNING),
        ((*RUN, pb.STOPPING, pb.STOPPED), rkt.POD_STATE_EXITED),
        ((*RUN, pb.DESTROYING), rkt.POD_STATE_DELETING),
        ((*RUN, pb.DESTROYING, pb.TERMINATED), rkt.POD_STATE_GARBAGE),
        ((*RUN, pb.FAILED), rkt.POD_STATE_EXITED),
        ((*PLACED, pb.FAILED), rkt.POD_STATE_ABORTED_PREPARE),
        ((*RUN, pb.SCHEDULING), rkt.POD_STATE_PREPARING),
        ((pb.SCHEDULING,), rkt.POD_STATE_PREPARING),
    ],
)
def test_pod_states_follow_the_instance(path, state):
    assert pod_state(_instance(*path)) == state


def _annotations(pod: rkt.Pod) -> dict[str, str]:
    return {kv.Key: kv.value for kv in pod.annotations}


def test_preparing_pods_show_only_id_state_and_the_scheduler_annotations():
    pod = pod_of(_instance(*PLACED), Detail.FULL, node_states={"n1": "READY"})
    assert (pod.id, pod.state) == ("id-1", rkt.POD_STATE_PREPARING)
    assert not pod.apps and not pod.manifest and not pod.created_at and not pod.networks
    assert _annotations(pod) == {
        "scheduler/instance-name": "web",
        "scheduler/node": "n1",
        "scheduler/node-state": "READY",
        "scheduler/status": "SCHEDULED",
        "scheduler/limit": "cpu=1 memory=1 disk=1",
    }
    unplaced = pod_of(_instance(pb.SCHEDULING), Detail.FULL)
    assert unplaced.state == rkt.POD_STATE_PREPARING
    assert _annotations(unplaced)["scheduler/node"] == "none"
    assert _annotations(unplaced)["scheduler/node-state"] == "none"
    gone = pod_of(_instance(*RUN), Detail.REDUCED, node_states={})
    assert _annotations(gone)["scheduler/node-state"] == "UNKNOWN"


def test_each_transition_becomes_events_once():
    translator = EventTranslator(3600 * 10**9)
    record = _instance(*RUN)
    kinds = [rkt.EventType.Name(e.type) for e in translator.replay([record])]
    assert kinds == [
        "EVENT_TYPE_IMAGE_IMPORTED",
        "EVENT_TYPE_POD_PREPARED",
        "EVENT_TYPE_POD_STARTED",
        "EVENT_TYPE_APP_STARTED",
    ]
    assert translator.absorb(record) == []
    killed = record.moved(pb.DESTROYING, "", at_ns=9 * 10**9, step=9)
    events = translator.absorb(killed)
    assert [(rkt.EventType.Name(e.type), e.data[-1].value) for e in events] == [
        ("EVENT_TYPE_APP_EXITED", "137"),
        ("EVENT_TYPE_POD_EXITED", "n1"),
    ]
    gone = killed.moved(pb.TERMINATED, "", at_ns=10 * 10**9, step=10)
    assert [e.type for e in translator.absorb(gone)] == [rkt.EVENT_TYPE_POD_GARBAGE_COLLECTED]
    # A second instance of the same image does not import it again.
    other = _instance(*PLACED)
    other = InstanceRecord(**{**other.__dict__, "id": "id-2"})
    assert translator.absorb(other) == []
