"""Awaitables that are done at once, for hot paths whose common case needs no wait.

A function on every call's path that usually knows its answer at once (the gate admitting a
recently verified token, a body of no bytes) returns an :class:`Immediate` instead of being a
coroutine: awaiting one costs a fraction of creating and running a coroutine frame, and each
such layer is measurable per request (``tests/bench``).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Generic, TypeVar

T = TypeVar("T")


class Immediate(Generic[T]):
    """An awaitable giving ``value`` without suspending."""

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value

    def __await__(self) -> Generator[None, None, T]:
        return self.value
        yield  # a generator that ends at once


NOTHING: Immediate[None] = Immediate(None)
EMPTY: Immediate[bytes] = Immediate(b"")
