"""Which pods a caller sees: a node account (``portico node-agent``) only its own node's."""

from __future__ import annotations

from app.calls.callers import Role, current_caller
from app.services.kudo.records import InstanceRecord


def visible(instance: InstanceRecord) -> bool:
    """Whether the caller may see this pod: a node account only its own node's."""
    caller = current_caller.get()
    return caller is None or caller.role != Role.NODE or instance.node == caller.username


def sees_every_pod() -> bool:
    """Whether :func:`visible` holds for every pod, for this caller."""
    caller = current_caller.get()
    return caller is None or caller.role != Role.NODE
