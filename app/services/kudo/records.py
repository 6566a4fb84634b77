"""What the scheduler persists: node and instance records, stored as compact sorted JSON.

Kinds and keys: ``scheduler.node/<node id>``, ``scheduler.instance/<instance id>`` and
``scheduler.subnet/<cidr>`` (a claim naming the node that holds the subnet, so two registrations
can never share one). The protos carry no room for placement, timestamps or history, hence JSON;
the ``Instance``/``InstanceStatus`` messages are derived from a record.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from app.services.kudo.images import InvalidReference, parse_reference
from app.services.kudo.placement import Capacity
from app.store.indexes import define_index
from gen.scheduler import scheduler_pb2 as pb

NODE = "scheduler.node"
INSTANCE = "scheduler.instance"
# Instances by the id of the image they run: the runtime view finds a pod's image history
# without reading every instance.
BY_IMAGE = "image"
SUBNET = "scheduler.subnet"

# States an instance still holds its node's capacity in (TERMINATED and FAILED release it).
RESERVING = frozenset(
    {pb.SCHEDULED, pb.STARTING, pb.RUNNING, pb.STOPPING, pb.STOPPED, pb.DESTROYING}
)
FINAL = frozenset({pb.TERMINATED, pb.FAILED})
# The container process is up in these states (it exits when leaving them).
UP = frozenset({pb.RUNNING, pb.STOPPING})
# An instance keeps at most this many transitions (its logs and runtime events come from them).
HISTORY_LIMIT = 100


def _dump(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _capacity(raw: dict[str, int] | None) -> Capacity:
    raw = raw or {}
    return Capacity(raw.get("cpu", 0), raw.get("memory", 0), raw.get("disk", 0))


def summary(capacity: Capacity) -> pb.ResourceSummary:
    """The proto form of a capacity."""
    return pb.ResourceSummary(cpu=capacity.cpu, memory=capacity.memory, disk=capacity.disk)


def capacity_of(message: pb.ResourceSummary) -> Capacity:
    """The capacity a ``ResourceSummary`` describes."""
    return Capacity(message.cpu, message.memory, message.disk)


@dataclass(frozen=True)
class NodeRecord:
    """A registered node: identity, subnet and the latest status it reported."""

    id: str
    fingerprint: str
    subnet: str
    registered_at: float
    status: pb.Status = pb.STARTING
    description: str = "registered; waiting for its first status report"
    limit: Capacity = field(default_factory=Capacity)
    usage: Capacity = field(default_factory=Capacity)
    # Wall-clock seconds of the latest report (of the registration before any report).
    reported_at: float = 0.0
    # Whether a Status stream is open; failure detection starts when it ends.
    streaming: bool = False

    @property
    def healthy(self) -> bool:
        """Whether instances may be placed here: it reports RUNNING with some capacity."""
        return self.status == pb.RUNNING and self.limit != Capacity()

    def to_bytes(self) -> bytes:
        return _dump(dataclasses.asdict(self))

    @classmethod
    def from_bytes(cls, data: bytes) -> NodeRecord:
        raw = json.loads(data)
        raw["limit"] = _capacity(raw.get("limit"))
        raw["usage"] = _capacity(raw.get("usage"))
        return cls(**raw)

    def node_status(self) -> pb.NodeStatus:
        """The node as a ``NodeStatus`` message."""
        return pb.NodeStatus(
            id=self.id,
            status=self.status,
            statusDescription=self.description,
            resource=pb.Resource(limit=summary(self.limit), usage=summary(self.usage)),
        )


@dataclass(frozen=True)
class Transition:
    """One status change of an instance: the source of its status stream, logs and pod events."""

    seq: int
    status: pb.Status
    at_ns: int
    node: str
    description: str


@dataclass(frozen=True)
class InstanceRecord:
    """An instance as the scheduler keeps it."""

    id: str
    name: str
    uri: str
    environment: tuple[str, ...]
    ports: tuple[tuple[int, int], ...]
    limit: Capacity
    created_ns: int
    status: pb.Status = pb.SCHEDULING
    description: str = ""
    usage: Capacity = field(default_factory=Capacity)
    node: str = ""
    ip: str = ""
    # The state the owner asked for: Stop clears it, Start sets it; rescheduling keeps it.
    wants_running: bool = True
    # The simulated clock's step at the latest transition (the runtime times states from it).
    step: int = 0
    history: tuple[Transition, ...] = field(default=())

    def moved(
        self, status: pb.Status, description: str, *, at_ns: int, step: int, **changes: Any
    ) -> InstanceRecord:
        """This instance after a transition to ``status`` (other fields in ``changes``)."""
        updated = dataclasses.replace(self, **changes)
        seq = self.history[-1].seq + 1 if self.history else 1
        entry = Transition(seq, status, at_ns, updated.node, description)
        return dataclasses.replace(
            updated,
            status=status,
            description=description,
            step=step,
            history=(*self.history, entry)[-HISTORY_LIMIT:],
        )

    def to_bytes(self) -> bytes:
        return _dump(dataclasses.asdict(self))

    @classmethod
    def from_bytes(cls, data: bytes) -> InstanceRecord:
        raw = json.loads(data)
        raw["limit"] = _capacity(raw["limit"])
        raw["usage"] = _capacity(raw.get("usage"))
        raw["environment"] = tuple(raw["environment"])
        raw["ports"] = tuple((int(s), int(d)) for s, d in raw["ports"])
        raw["history"] = tuple(Transition(**t) for t in raw.get("history", ()))
        return cls(**raw)

    @property
    def reserves(self) -> bool:
        """Whether it holds capacity on its node."""
        return bool(self.node) and self.status in RESERVING

    def instance(self) -> pb.Instance:
        """The instance as the API shows it."""
        return pb.Instance(
            id=self.id,
            name=self.name,
            type=pb.CONTAINER,
            status=self.status,
            uri=self.uri,
            environnement=list(self.environment),
            resource=self.resource(),
            ports=[pb.Port(source=s, destination=d) for s, d in self.ports],
            ip=self.ip,
        )

    def resource(self) -> pb.Resource:
        return pb.Resource(limit=summary(self.limit), usage=summary(self.usage))

    def instance_status(self) -> pb.InstanceStatus:
        """The status message of its Create stream."""
        return pb.InstanceStatus(
            id=self.id,
            status=self.status,
            statusDescription=self.description,
            resource=self.resource(),
        )


def _image_ids(data: bytes) -> list[str]:
    try:
        return [parse_reference(json.loads(data)["uri"]).id]
    except InvalidReference:
        return []


define_index(INSTANCE, BY_IMAGE, _image_ids)
