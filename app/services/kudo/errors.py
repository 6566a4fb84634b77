"""The scheduler's refusals, each with the gRPC status the servicer answers with."""

from __future__ import annotations

import grpc


class SchedulerError(Exception):
    """A request the scheduler refuses; ``code`` is the gRPC status, the message says why."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
