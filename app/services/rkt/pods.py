"""The runtime view of the scheduler's instances: pods, images, events and log lines.

Every instance is a pod (pod id = instance id; its one app is the instance's container, named
like the instance, running the image its ``uri`` names). One waiting for a node (never placed, or
being placed again) is a pod in state PREPARING with the annotation ``scheduler/node: none``: the
API's only way to show an unplaced instance. Every pod also carries ``scheduler/node-state``, the
state of its node as the scheduler sees it: ``READY`` (reporting RUNNING with capacity),
``FAILED``, ``NOT_READY`` (registered, not reporting RUNNING yet), ``UNKNOWN`` (no longer
registered) or ``none``, and ``scheduler/instance-name``, ``scheduler/status`` and
``scheduler/limit`` (``cpu=1 memory=128 disk=1``, what a node agent sums usage over). Pods in the
states the document shows bare (Embryo, Preparing, AbortedPrepare) show id, state and these
annotations only. Everything
here is derived from the stored instance records and their transitions, so it is the same on
every replica and after a restart.

Pod states: SCHEDULING (waiting for a node) → PREPARING, SCHEDULED → PREPARING, STARTING → PREPARED,
RUNNING/STOPPING → RUNNING, STOPPED → EXITED, DESTROYING → DELETING, TERMINATED → GARBAGE, FAILED
→ EXITED if it ran since its last placement, else ABORTED_PREPARE.
Events per transition: placed → IMAGE_IMPORTED (first placement of that image only); STARTING →
POD_PREPARED; RUNNING → POD_STARTED, APP_STARTED; leaving RUNNING/STOPPING → APP_EXITED,
POD_EXITED; FAILED while preparing → POD_PREPARE_ABORTED; TERMINATED → POD_GARBAGE_COLLECTED.
Images are never removed (no IMAGE_REMOVED): an image stays once a node pulled it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from app.services.kudo.images import ImageReference, parse_reference
from app.services.kudo.records import UP, InstanceRecord, Transition
from gen.scheduler import scheduler_pb2 as spb
from gen.v1alpha import api_pb2 as pb

NETWORK = "default"
APPC_VERSION = "0.8.11"
# A container killed rather than stopped exits like one that got SIGKILL.
KILLED_EXIT_CODE = 137
_FORMATS = {
    "docker": pb.ImageFormat(type=pb.IMAGE_TYPE_DOCKER, version="2.2"),
    "oci": pb.ImageFormat(type=pb.IMAGE_TYPE_OCI, version="1.0.0"),
}
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


class Detail:
    """How much of a pod or image to show."""

    REDUCED = 0  # ListPods/ListImages with detail false
    LISTED = 1  # ListPods/ListImages with detail true
    FULL = 2  # InspectPod/InspectImage


def was_placed(instance: InstanceRecord) -> bool:
    """Whether the instance has ever been placed on a node (its image was pulled there)."""
    return bool(instance.node) or any(t.status == spb.SCHEDULED for t in instance.history)


def _kv(pairs: Iterable[tuple[str, str]]) -> list[pb.KeyValue]:
    return [pb.KeyValue(Key=k, value=v) for k, v in pairs]


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


def image_of(reference: ImageReference, imported_ns: int, detail: int) -> pb.Image:
    """The image a reference names, imported at ``imported_ns``."""
    image = pb.Image(
        base_format=_FORMATS[reference.format],
        id=reference.id,
        name=reference.name,
        version=reference.version,
        import_timestamp=imported_ns // 1_000_000_000,
        # Images are not pulled for real, so their size is unknown.
        size=0,
        annotations=_kv([("scheduler/uri", reference.uri)]),
        labels=_kv([("version", reference.version)]),
    )
    if detail != Detail.REDUCED:
        image.manifest = json.dumps(
            {
                "acKind": "ImageManifest",
                "acVersion": APPC_VERSION,
                "name": reference.name,
                "labels": [{"name": "version", "value": reference.version}],
                "annotations": [{"name": "scheduler/uri", "value": reference.uri}],
            },
            sort_keys=True,
        ).encode()
    return image


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
        _kv(
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
    app = pb.App(name=instance.name, annotations=_kv([("scheduler/uri", instance.uri)]))
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


def image_imports(instances: Iterable[InstanceRecord]) -> dict[str, tuple[ImageReference, int]]:
    """Every image on the nodes by id, with the time its first pod was placed."""
    found: dict[str, tuple[ImageReference, int]] = {}
    for instance in instances:
        if not was_placed(instance):
            continue
        reference = parse_reference(instance.uri)
        placed = [t.at_ns for t in instance.history if t.status == spb.SCHEDULED]
        at = min(placed) if placed else instance.history[0].at_ns
        known = found.get(reference.id)
        if known is None or at < known[1]:
            found[reference.id] = (reference, at)
    return found


def _event(
    kind: pb.EventType, subject: str, name: str, at_ns: int, data: dict[str, str]
) -> pb.Event:
    event = pb.Event(type=kind, id=subject, time=at_ns // 1_000_000_000, data=_kv(data.items()))
    setattr(event, "from", name)
    return event


@dataclass
class EventTranslator:
    """Turns instance transitions into rkt events, each transition exactly once."""

    def __post_init__(self) -> None:
        self.imported: set[str] = set()
        self.seen: dict[str, int] = {}

    def replay(self, instances: Iterable[InstanceRecord], from_ns: int = 0) -> list[pb.Event]:
        """The events of every transition so far at or after ``from_ns``, in time order (the
        earlier ones are translated too, so that first-import events stay first imports)."""
        steps = []
        for instance in instances:
            for index, transition in enumerate(instance.history):
                before = instance.history[index - 1].status if index else None
                steps.append((transition.at_ns, instance.id, transition.seq, instance, before))
            if instance.history:
                self.seen[instance.id] = instance.history[-1].seq
        steps.sort(key=lambda step: step[:3])
        events: list[pb.Event] = []
        for at_ns, _, seq, instance, before in steps:
            translated = self._translate(instance, seq, before)
            if at_ns >= from_ns:
                events.extend(translated)
        return events

    def absorb(self, instance: InstanceRecord) -> list[pb.Event]:
        """The events of the instance's transitions not translated yet."""
        last = self.seen.get(instance.id, 0)
        events: list[pb.Event] = []
        for index, transition in enumerate(instance.history):
            if transition.seq > last:
                before = instance.history[index - 1].status if index else None
                events.extend(self._translate(instance, transition.seq, before))
        if instance.history:
            self.seen[instance.id] = instance.history[-1].seq
        return events

    def _translate(self, instance: InstanceRecord, seq: int, before: int | None) -> list[pb.Event]:
        transition = next(t for t in instance.history if t.seq == seq)
        status, at = transition.status, transition.at_ns
        pod = {"node": transition.node}
        events: list[pb.Event] = []
        if status == spb.SCHEDULED:
            reference = parse_reference(instance.uri)
            if reference.id not in self.imported:
                self.imported.add(reference.id)
                events.append(
                    _event(
                        pb.EVENT_TYPE_IMAGE_IMPORTED,
                        reference.id,
                        reference.name,
                        at,
                        {"uri": instance.uri},
                    )
                )
        if before in UP and status not in UP:
            code = 0 if status == spb.STOPPED else KILLED_EXIT_CODE
            events.append(
                _event(
                    pb.EVENT_TYPE_APP_EXITED,
                    instance.id,
                    instance.name,
                    at,
                    {"app": instance.name, "exit_code": str(code)},
                )
            )
            events.append(_event(pb.EVENT_TYPE_POD_EXITED, instance.id, instance.name, at, pod))
        if status == spb.STARTING:
            events.append(_event(pb.EVENT_TYPE_POD_PREPARED, instance.id, instance.name, at, pod))
        elif status == spb.RUNNING:
            events.append(_event(pb.EVENT_TYPE_POD_STARTED, instance.id, instance.name, at, pod))
            events.append(
                _event(
                    pb.EVENT_TYPE_APP_STARTED,
                    instance.id,
                    instance.name,
                    at,
                    {"app": instance.name},
                )
            )
        elif status == spb.FAILED and before in (spb.SCHEDULED, spb.STARTING):
            events.append(
                _event(pb.EVENT_TYPE_POD_PREPARE_ABORTED, instance.id, instance.name, at, pod)
            )
        elif status == spb.TERMINATED and any(
            t.status == spb.SCHEDULED for t in instance.history if t.seq < seq
        ):
            events.append(
                _event(pb.EVENT_TYPE_POD_GARBAGE_COLLECTED, instance.id, instance.name, at, pod)
            )
        return events


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
