"""Where an instance runs: best fit among healthy nodes with enough free capacity.

Free capacity is a node's limit minus the limits of the instances already placed on it (usage
moves; reservations do not). Best fit leaves the least capacity unused, measured as the sum of
the free shares of cpu, memory and disk after placement; ties go to the node whose name sorts
first, so placement is deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

DIMENSIONS = ("cpu", "memory", "disk")


@dataclass(frozen=True)
class Capacity:
    """An amount of cpu, memory and disk."""

    cpu: int = 0
    memory: int = 0
    disk: int = 0

    def __sub__(self, other: Capacity) -> Capacity:
        return Capacity(self.cpu - other.cpu, self.memory - other.memory, self.disk - other.disk)

    def __add__(self, other: Capacity) -> Capacity:
        return Capacity(self.cpu + other.cpu, self.memory + other.memory, self.disk + other.disk)

    def fits(self, need: Capacity) -> bool:
        """Whether ``need`` fits in this much room."""
        return all(getattr(self, d) >= getattr(need, d) for d in DIMENSIONS)


@dataclass(frozen=True)
class NodeRoom:
    """A schedulable node: its name, its limit and what is already reserved on it."""

    name: str
    limit: Capacity
    reserved: Capacity

    @property
    def free(self) -> Capacity:
        return self.limit - self.reserved


def _waste(node: NodeRoom, need: Capacity) -> float:
    left = node.free - need
    return sum(
        getattr(left, d) / getattr(node.limit, d) for d in DIMENSIONS if getattr(node.limit, d) > 0
    )


def best_fit(nodes: Iterable[NodeRoom], need: Capacity) -> NodeRoom | None:
    """The node that fits ``need`` most tightly, or None when no node has room."""
    candidates = [n for n in nodes if n.free.fits(need)]
    if not candidates:
        return None
    return min(candidates, key=lambda n: (_waste(n, need), n.name))
