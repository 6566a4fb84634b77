"""Where a watch stands in the event log, for transports that let a client resume a stream.

The store marks the revision of every event it hands a watcher. A server-streaming servicer that
turns events into replies runs in its caller's task (an async generator shares its caller's
context), so the HTTP flow reads the mark after each reply and sends it as the SSE ``id:``. A
reconnecting client's ``Last-Event-ID`` is set as the resume point before the servicer runs:
watches started in that call begin after it, instead of where the servicer would begin, so no
event in between is lost. A servicer that translates events against state it read first asks
whether its call resumes (:func:`resuming`) and reads that state as of the resume point; which
transport called it, it never learns.
"""

from __future__ import annotations

from contextvars import ContextVar

_LAST_EVENT: ContextVar[int] = ContextVar("portico_last_event_revision", default=0)
_RESUME_AFTER: ContextVar[int] = ContextVar("portico_resume_after_revision", default=0)


def mark(revision: int) -> None:
    """The store hands the event at ``revision`` to a watcher in this task."""
    _LAST_EVENT.set(revision)


def last_event() -> int:
    """The revision of the event handed out last in this task (0: none)."""
    return _LAST_EVENT.get()


def resume_after(revision: int) -> None:
    """Watches started from now on in this task begin after ``revision``."""
    _RESUME_AFTER.set(revision)


def resuming() -> bool:
    """Whether this task's call resumes a stream (a resume point is set)."""
    return bool(_RESUME_AFTER.get())


def watch_start(since_revision: int) -> int:
    """Where a watch asked to begin after ``since_revision`` begins."""
    return _RESUME_AFTER.get() or since_revision
