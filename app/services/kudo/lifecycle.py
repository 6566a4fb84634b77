"""The instance state machine: which request may move an instance from which state.

``Create``: SCHEDULING → SCHEDULED → STARTING → RUNNING (SCHEDULING lasts until a node has room).
``Stop``: RUNNING or STARTING → STOPPING → STOPPED. ``Start``: STOPPED → STARTING → RUNNING.
``Destroy``: any state but DESTROYING and TERMINATED → DESTROYING → TERMINATED.
A FAILED instance may only be destroyed; TERMINATED is final.
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


class IllegalTransition(Exception):
    """The request is not allowed in the instance's current state."""


def state_name(status: int) -> str:
    """The enum name of a status, for messages."""
    return pb.Status.Name(status)


def after_request(current: pb.Status, request: str) -> pb.Status:
    """The state ``request`` moves an instance in ``current`` to; IllegalTransition if none."""
    allowed_from, target = REQUESTS[request]
    if current not in allowed_from:
        allowed = ", ".join(sorted(state_name(s) for s in allowed_from))
        raise IllegalTransition(
            f"cannot {request} an instance that is {state_name(current)} (allowed from: {allowed})"
        )
    return target
