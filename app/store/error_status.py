"""The ``google.rpc.Status`` a store error stands for, whoever reports it: a servicer, a
transport meeting one from the gate's checks or idempotency records, the proxy's login."""

from __future__ import annotations

import logging

from google.rpc import status_pb2

from app.calls.refusals import rich_status_proto
from app.observe.repeats import Repeats
from app.store.errors import StoreError, Unavailable

log = logging.getLogger("portico.store")
_store_errors = Repeats(log)


def store_error_status(error: StoreError, request_id: str) -> status_pb2.Status:
    """The status a store error stands for (NOT_FOUND, ABORTED, UNAVAILABLE, ...); for
    UNAVAILABLE with the delay to retry after (``google.rpc.RetryInfo``, HTTP's Retry-After).

    What the database driver said goes to the log with the request id (a line of each kind per
    interval: an outage fails every call at once); the caller gets the generic message and that
    id, to quote when asking an operator.
    """
    message = error.message
    if error.detail:
        _store_errors.warning(
            message, "store error (request id %s): %s: %s", request_id, message, error.detail
        )
        message = f"{message} (request id {request_id})"
    retry_after = error.retry_after if isinstance(error, Unavailable) else 0.0
    return rich_status_proto(error.code, message, retry_after=retry_after)
