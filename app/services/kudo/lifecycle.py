"""The instance state machine: which request may move an instance from which state.

``Create``: SCHEDULING → SCHEDULED → STARTING → RUNNING (SCHEDULING lasts until a node has room).
``Stop``: RUNNING or STARTING → STOPPING → STOPPED. ``Start``: STOPPED → STARTING → RUNNING.
``Destroy``: any state but DESTROYING and TERMINATED → DESTROYING → TERMINATED.
A FAILED instance may only be destroyed; TERMINATED is final.
A repeat of a request that already took effect or is under way (Stop on STOPPING or STOPPED,
Destroy on DESTROYING or TERMINATED) changes nothing and is no error, as in the original: a
controller retrying a call whose answer it lost must not see a failure.
"""

from __future__ import annotations

from gen.scheduler import scheduler_pb2 as pb

# request → (states it is allowed from, the state it moves the instance to at once)
REQUESTS: dict[str, tuple[frozenset[int], pb.Status]] = {
    "start": (frozenset({pb.STOPPED}), pb.STARTING),
    "stop": (frozenset({pb.RUNNING, pb.STARTING}), pb.STOPPING),
    "destroy": (
        frozenset(set(pb.Status.values()) - {pb.DESTROYING, pb.TERMINATED}),
        pb.DESTROYING,
    ),
}


# request → the states in which it already took effect (or is taking effect): a no-op there.
REPEATS: dict[str, frozenset[int]] = {
    "start": frozenset(),
    "stop": frozenset({pb.STOPPING, pb.STOPPED}),
    "destroy": frozenset({pb.DESTROYING, pb.TERMINATED}),
}


class IllegalTransition(Exception):
    """The request is not allowed in the instance's current state."""


def state_name(status: int) -> str:
    """The enum name of a status, for messages."""
    return pb.Status.Name(status)


def is_repeat(current: pb.Status, request: str) -> bool:
    """Whether ``request`` already took effect on an instance in ``current``."""
    return current in REPEATS[request]


def after_request(current: pb.Status, request: str) -> pb.Status:
    """The state ``request`` moves an instance in ``current`` to; IllegalTransition if none."""
    allowed_from, target = REQUESTS[request]
    if current not in allowed_from:
        allowed = ", ".join(sorted(state_name(s) for s in allowed_from))
        raise IllegalTransition(
            f"cannot {request} an instance that is {state_name(current)} (allowed from: {allowed})"
        )
    return target
