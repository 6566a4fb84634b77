"""Runtime events, translated from the instances' transitions (and the image shelf's clock).

Events per transition: placed → IMAGE_IMPORTED (when the image is not on the nodes); STARTING →
POD_PREPARED; RUNNING → POD_STARTED, APP_STARTED; leaving RUNNING/STOPPING → APP_EXITED,
POD_EXITED; FAILED while preparing → POD_PREPARE_ABORTED; TERMINATED → POD_GARBAGE_COLLECTED.
IMAGE_REMOVED comes at the moment an unused image's retention ends
(:mod:`app.services.rkt.images`), which no transition marks: streams ask :meth:`next_due`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from app.services.kudo.images import ImageReference, parse_reference
from app.services.kudo.records import UP, InstanceRecord, Transition
from app.services.rkt.images import ImageShelf, key_values
from app.services.rkt.pods import KILLED_EXIT_CODE, was_placed
from gen.scheduler import scheduler_pb2 as spb
from gen.v1alpha import api_pb2 as pb


def _event(
    kind: pb.EventType, subject: str, name: str, at_ns: int, data: dict[str, str]
) -> pb.Event:
    event = pb.Event(
        type=kind, id=subject, time=at_ns // 1_000_000_000, data=key_values(data.items())
    )
    setattr(event, "from", name)
    return event


class EventTranslator:
    """Turns instance transitions into rkt events, each transition exactly once."""

    def __init__(self, image_retention_ns: int) -> None:
        self.shelf = ImageShelf(image_retention_ns)
        self.seen: dict[str, int] = {}

    def copy(self) -> EventTranslator:
        """A translator in this one's state, going on independently (streams that start from
        one snapshot share its replay)."""
        shelf = self.shelf
        twin = EventTranslator(shelf.retention_ns)
        twin.seen = dict(self.seen)
        twin.shelf.present = dict(shelf.present)
        twin.shelf.users = {image: set(pods) for image, pods in shelf.users.items()}
        twin.shelf.removal_due = dict(shelf.removal_due)
        return twin

    def replay(
        self, instances: Iterable[InstanceRecord], from_ns: int = 0, now_ns: int | None = None
    ) -> list[pb.Event]:
        """The events of every transition so far (and image removals due by ``now_ns``) at or
        after ``from_ns``, in time order; earlier ones are translated too, so that the image
        shelf is right."""
        return [event for at, event in self.replay_timed(instances, now_ns) if at >= from_ns]

    def replay_timed(
        self, instances: Iterable[InstanceRecord], now_ns: int | None = None
    ) -> list[tuple[int, pb.Event]]:
        """:meth:`replay` from the start, each event with its moment (nanoseconds)."""
        steps = []
        for instance in instances:
            for index, transition in enumerate(instance.history):
                before = instance.history[index - 1].status if index else None
                steps.append(
                    (transition.at_ns, instance.id, transition.seq, instance, transition, before)
                )
            if instance.history:
                self.seen[instance.id] = instance.history[-1].seq
        steps.sort(key=lambda step: step[:3])
        events: list[tuple[int, pb.Event]] = []
        for at_ns, _, _, instance, transition, before in steps:
            events.extend(self._removals(at_ns))
            events.extend((at_ns, event) for event in self._translate(instance, transition, before))
        events.extend(self._removals(time.time_ns() if now_ns is None else now_ns))
        return events

    def absorb(self, instance: InstanceRecord) -> list[pb.Event]:
        """The events of the instance's transitions not translated yet."""
        last = self.seen.get(instance.id, 0)
        history = instance.history
        # The new transitions are the last few (seq grows along the history): found from the end.
        first = len(history)
        while first and history[first - 1].seq > last:
            first -= 1
        events: list[pb.Event] = []
        for index in range(first, len(history)):
            transition = history[index]
            before = history[index - 1].status if index else None
            events.extend(self.removals(transition.at_ns))
            events.extend(self._translate(instance, transition, before))
        if history:
            self.seen[instance.id] = history[-1].seq
        return events

    def next_due(self) -> int | None:
        """When the next IMAGE_REMOVED is due (nanoseconds), if one is waiting."""
        return self.shelf.next_due()

    def removals(self, now_ns: int) -> list[pb.Event]:
        """IMAGE_REMOVED for every unused image whose retention ended by ``now_ns``."""
        return [event for _, event in self._removals(now_ns)]

    def _removals(self, now_ns: int) -> list[tuple[int, pb.Event]]:
        return [
            (at, _event(pb.EVENT_TYPE_IMAGE_REMOVED, ref.id, ref.name, at, {"uri": ref.uri}))
            for ref, at in self.shelf.remove_due(now_ns)
        ]

    def _translate(
        self, instance: InstanceRecord, transition: Transition, before: int | None
    ) -> list[pb.Event]:
        status, at = transition.status, transition.at_ns
        events: list[pb.Event] = []
        if status == spb.SCHEDULED:
            reference = parse_reference(instance.uri)
            if self.shelf.placed(instance.id, reference, at):
                events.append(
                    _event(
                        pb.EVENT_TYPE_IMAGE_IMPORTED,
                        reference.id,
                        reference.name,
                        at,
                        {"uri": instance.uri},
                    )
                )
        own = _transition_events(instance, transition, before)
        events.extend(own)
        if any(event.type == pb.EVENT_TYPE_POD_GARBAGE_COLLECTED for event in own):
            self.shelf.released(instance.id, parse_reference(instance.uri), at)
        return events


# A transition's own events (all but the image shelf's) are the same for every stream that
# translates it: a thousand streams seeing one write build them once. Keyed by what makes the
# transition unique, including its time (an id may be used again after a Destroy).
_TRANSITION_EVENTS: dict[tuple[str, str, int, int, str, int | None], tuple[pb.Event, ...]] = {}
_TRANSITION_EVENTS_KEPT = 4096


def _transition_events(
    instance: InstanceRecord, transition: Transition, before: int | None
) -> tuple[pb.Event, ...]:
    key = (instance.id, instance.name, transition.seq, transition.at_ns, transition.node, before)
    events = _TRANSITION_EVENTS.get(key)
    if events is None:
        events = tuple(_translated(instance, transition, before))
        if len(_TRANSITION_EVENTS) >= _TRANSITION_EVENTS_KEPT:
            del _TRANSITION_EVENTS[next(iter(_TRANSITION_EVENTS))]  # the oldest
        _TRANSITION_EVENTS[key] = events
    return events


def _translated(
    instance: InstanceRecord, transition: Transition, before: int | None
) -> list[pb.Event]:
    status, at, seq = transition.status, transition.at_ns, transition.seq
    pod = {"node": transition.node}
    events: list[pb.Event] = []
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


def images_present(
    instances: Iterable[InstanceRecord], retention_ns: int, now_ns: int | None = None
) -> dict[str, tuple[ImageReference, int]]:
    """The images on the nodes now: id → (reference, import time in ns)."""
    translator = EventTranslator(retention_ns)
    translator.replay([i for i in instances if was_placed(i)], now_ns=now_ns)
    return dict(translator.shelf.present)
