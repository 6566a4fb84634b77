"""The runtime view of the scheduler's instances: pods and their lifecycle log lines.

Every instance is a pod (pod id = instance id; its one app is the instance's container, named
like the instance, running the image its ``uri`` names). One waiting for a node (never placed, or
being placed again) is a pod in state PREPARING with the annotation ``scheduler/node: none``: the
API's only way to show an unplaced instance. Every pod also carries ``scheduler/node-state``, the
state of its node as the scheduler sees it: ``READY`` (reporting RUNNING with capacity),
``FAILED``, ``NOT_READY`` (registered, not reporting RUNNING yet), ``UNKNOWN`` (no longer
registered) or ``none``, and ``scheduler/instance-name``, ``scheduler/status`` and
``scheduler/limit`` (``cpu=1 memory=128 disk=1``, what a node agent sums usage over). Pods in the
states the document shows bare (Embryo, Preparing, AbortedPrepare) show id, state and these
annotations only. Everything here is derived from the stored instance records and their
transitions, so it is the same on every replica and after a restart (images:
:mod:`app.services.rkt.images`, events: :mod:`app.services.rkt.events`).

Pod states: SCHEDULING (waiting for a node) → PREPARING, SCHEDULED → PREPARING, STARTING →
PREPARED, RUNNING/STOPPING → RUNNING, STOPPED → EXITED, DESTROYING → DELETING, TERMINATED →
GARBAGE, FAILED → EXITED if it ran since its last placement, else ABORTED_PREPARE.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from app.services.kudo.images import parse_reference
from app.services.kudo.records import UP, InstanceRecord, Transition
from app.services.rkt.images import APPC_VERSION, Detail, image_of, key_values
from gen.scheduler import scheduler_pb2 as spb
from gen.v1alpha import api_pb2 as pb

NETWORK = "default"
# A container killed rather than stopped exits like one that got SIGKILL.
KILLED_EXIT_CODE = 137
UNPLACED = "none"
_POD_STATES = {
    spb.SCHEDULING: pb.POD_STATE_PREPARING,
    spb.SCHEDULED: pb.POD_STATE_PREPARING,
    spb.STARTING: pb.POD_STATE_PREPARED,
    spb.RUNNING: pb.POD_STATE_RUNNING,
    spb.STOPPING: pb.POD_STATE_RUNNING,
    spb.STOPPED: pb.POD_STATE_EXITED,
    spb.DESTROYING: pb.POD_STATE_DELETING,
    spb.TERMINATED: pb.POD_STATE_GARBAGE,
}
# The pod document: in these states only id and state are shown.
_BARE_STATES = frozenset(
    {pb.POD_STATE_EMBRYO, pb.POD_STATE_PREPARING, pb.POD_STATE_ABORTED_PREPARE}
)


def was_placed(instance: InstanceRecord) -> bool:
    """Whether the instance has ever been placed on a node (its image was pulled there)."""
    return bool(instance.node) or any(t.status == spb.SCHEDULED for t in instance.history)


def _placement(instance: InstanceRecord) -> list[Transition]:
    """The transitions since the latest placement (the life of the current pod)."""
    history = list(instance.history)
    for index in range(len(history) - 1, -1, -1):
        if history[index].status == spb.SCHEDULED:
            return history[index:]
    return history


def _ran(transitions: Iterable[Transition]) -> bool:
    return any(t.status == spb.RUNNING for t in transitions)


def pod_state(instance: InstanceRecord) -> pb.PodState:
    """The rkt pod state of an instance."""
    if instance.status == spb.FAILED:
        return pb.POD_STATE_EXITED if _ran(_placement(instance)) else pb.POD_STATE_ABORTED_PREPARE
    return _POD_STATES[instance.status]


def _exit_code(instance: InstanceRecord) -> int:
    history = list(instance.history)
    for before, after in zip(history[-2::-1], history[::-1], strict=False):
        if before.status in UP and after.status not in UP:
            return 0 if after.status == spb.STOPPED else KILLED_EXIT_CODE
    return 0


def cgroup_of(instance_id: str) -> str:
    """The pod's cgroup, as systemd names rkt's machine scopes."""
    return "/machine.slice/machine-rkt\\x2d" + instance_id.replace("-", "\\x2d") + ".scope"


def limit_annotation(instance: InstanceRecord) -> str:
    """``cpu=<n> memory=<n> disk=<n>``: the instance's resource limits."""
    limit = instance.limit
    return f"cpu={limit.cpu} memory={limit.memory} disk={limit.disk}"


def pod_of(
    instance: InstanceRecord,
    detail: int,
    images: dict[str, int] | None = None,
    node_states: Mapping[str, str] | None = None,
) -> pb.Pod:
    """The pod an instance is; ``images`` maps image ids to import times, ``node_states`` node
    ids to their state (see the module docstring)."""
    state = pod_state(instance)
    pod = pb.Pod(id=instance.id, state=state)
    node_state = (node_states or {}).get(instance.node, "UNKNOWN") if instance.node else UNPLACED
    pod.annotations.extend(
        key_values(
            [
                ("scheduler/instance-name", instance.name),
                ("scheduler/node", instance.node or UNPLACED),
                ("scheduler/node-state", node_state),
                ("scheduler/status", spb.Status.Name(instance.status)),
                ("scheduler/limit", limit_annotation(instance)),
            ]
        )
    )
    if state in _BARE_STATES:
        return pod
    life = _placement(instance)
    created = life[0].at_ns if life else instance.created_ns
    started = max((t.at_ns for t in life if t.status == spb.RUNNING), default=0)
    reference = parse_reference(instance.uri)
    running = state == pb.POD_STATE_RUNNING
    pod.created_at = created
    pod.started_at = started
    if instance.status == spb.TERMINATED:
        pod.gc_marked_at = instance.history[-1].at_ns
    if started:
        # A stable stand-in for the stage1 pid: derived from the pod and its start.
        digest = hashlib.sha256(f"{instance.id}:{started}".encode()).digest()
        pod.pid = 1000 + int.from_bytes(digest[:4], "big") % 60000
    if running:
        pod.cgroup = cgroup_of(instance.id)
        pod.networks.append(pb.Network(name=NETWORK, ipv4=instance.ip))
    if detail == Detail.REDUCED:
        return pod
    imported = (images or {}).get(reference.id, created)
    app = pb.App(name=instance.name, annotations=key_values([("scheduler/uri", instance.uri)]))
    if detail == Detail.FULL:
        app.image.CopyFrom(image_of(reference, imported, Detail.FULL))
        if running:
            app.state = pb.APP_STATE_RUNNING
        elif _ran(instance.history):
            app.state = pb.APP_STATE_EXITED
            app.exit_code = _exit_code(instance)
    else:
        app.image.id = reference.id
    pod.apps.append(app)
    pod.manifest = json.dumps(
        {
            "acKind": "PodManifest",
            "acVersion": APPC_VERSION,
            "apps": [
                {
                    "name": instance.name,
                    "image": {"id": reference.id, "name": reference.name},
                    "app": {
                        "environment": [
                            dict(zip(("name", "value"), v.split("=", 1), strict=True))
                            for v in instance.environment
                        ],
                        "ports": [
                            {"name": f"port-{d}", "protocol": "tcp", "port": d, "hostPort": s}
                            for s, d in instance.ports
                        ],
                    },
                }
            ],
            "annotations": [{"name": kv.Key, "value": kv.value} for kv in pod.annotations],
        },
        sort_keys=True,
    ).encode()
    return pod


@dataclass(frozen=True)
class LogLine:
    """One simulated log line of a pod's app."""

    at_ns: int
    text: str


def log_prefix(at_ns: int, app: str, node: str) -> str:
    """``<RFC 3339 time with ms> <app>[<node>]:``, the start of every log line."""
    when = datetime.fromtimestamp(at_ns / 1e9, UTC)
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
    return f"{stamp} {app}[{node or '-'}]:"


def log_lines(instance: InstanceRecord, after_seq: int = 0) -> list[LogLine]:
    """The app's lifecycle: one line per transition (after ``after_seq``), timestamped."""
    return [
        LogLine(
            t.at_ns,
            f"{log_prefix(t.at_ns, instance.name, t.node)} "
            f"{spb.Status.Name(t.status)}: {t.description}",
        )
        for t in instance.history
        if t.seq > after_seq
    ]
