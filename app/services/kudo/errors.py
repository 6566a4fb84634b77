"""The scheduler's refusals, each with the gRPC status the servicer answers with."""

from __future__ import annotations

from app.services.status import Rejected


class SchedulerError(Rejected):
    """A request the scheduler refuses; ``code`` is the gRPC status, the message says why."""
