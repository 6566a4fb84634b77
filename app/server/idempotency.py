"""Idempotency keys kept in the store: a keyed call runs once, its repeats get its first outcome.

The hook both transports call (``app/gateway/idempotency.py``). A keyed call runs inside one
store transaction that every write of its servicer joins (``ObjectStore.atomically``), and its
outcome is recorded in that same transaction: the call's writes and its record commit together
or not at all. So a process killed after the commit and before the reply leaves a record, and the
retry gets the committed outcome; one killed before it leaves nothing, and the retry runs afresh.
The transaction holds the store's write lock, so a concurrent repeat (in any worker or replica)
waits for the first to finish and then finds its record.

Outcomes are kept per caller (the account the gate admitted; anonymous calls share one space)
and key for the retention. Transient endings (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED,
RESOURCE_EXHAUSTED, ABORTED, INTERNAL, UNKNOWN) are not recorded and undo the call's writes, so a
retry runs it again.
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from datetime import timedelta

import grpc
from google.protobuf.message import Message
from google.rpc import status_pb2

from app.calls.callers import current_caller
from app.gateway.errors import GatewayError
from app.gateway.idempotency import HEADER
from app.gateway.registry import Method
from app.store import ObjectStore, StoredOutcome

log = logging.getLogger("portico.idempotency")

TRANSIENT = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
    }
)
_OK = grpc.StatusCode.OK.value[0]


def request_hash(method: Method, request: Message) -> str:
    """What "the same request" means: the method and the request's deterministic bytes."""
    digest = hashlib.sha256(method.full_name.encode())
    digest.update(b"\0")
    digest.update(request.SerializeToString(deterministic=True))
    return digest.hexdigest()


class StoredIdempotency:
    """The idempotency hook over the store's records (see the module's docstring).

    ``crash_after_commit`` names a method (``package.Service.Method``) after whose committed
    keyed call the process kills itself before replying: a test-only fault to place a crash
    exactly between commit and reply.
    """

    def __init__(
        self, store: ObjectStore, retention: timedelta, *, crash_after_commit: str = ""
    ) -> None:
        self._store = store
        self._retention = retention
        self._crash_after_commit = crash_after_commit

    async def __call__(
        self, method: Method, key: str, request: Message, run: Callable[[], Awaitable[Message]]
    ) -> Message:
        caller = current_caller.get()
        caller_id = "" if caller is None else caller.account_id
        wanted = request_hash(method, request)
        records = self._store.idempotency
        found = await records.get(caller_id, key)
        if found is not None:
            return _replay(method, key, wanted, found)
        async with self._store.atomically():
            # Read again under the write lock: a repeat that waited for the first sees it now.
            found = await records.get(caller_id, key)
            if found is not None:
                outcome: Message | GatewayError = _replay_outcome(method, key, wanted, found)
            else:
                outcome = await _first_run(run)
                await records.put(caller_id, key, _stored(method, wanted, outcome), self._retention)
                if method.full_name == self._crash_after_commit:
                    self._crash_after(method)
        if isinstance(outcome, GatewayError):
            raise outcome
        return outcome

    def _crash_after(self, method: Method) -> None:
        # Registered to run once the transaction has committed, before the reply is sent.
        def crash() -> None:
            log.warning("PORTICO_TEST_CRASH_AFTER_COMMIT: killing the process after %s", method)
            os.kill(os.getpid(), signal.SIGKILL)

        self._store.database.after_commit(crash)

    async def forget_expired(self) -> int:
        """Delete expired records (the leader's job); returns how many."""
        return await self._store.idempotency.forget_expired()


async def _first_run(run: Callable[[], Awaitable[Message]]) -> Message | GatewayError:
    """The call's outcome; a transient error propagates (undoing the transaction)."""
    try:
        return await run()
    except GatewayError as error:
        if error.code in TRANSIENT:
            raise
        return error


def _stored(method: Method, wanted: str, outcome: Message | GatewayError) -> StoredOutcome:
    if isinstance(outcome, GatewayError):
        code, data = outcome.code.value[0], outcome.status().SerializeToString()
    else:
        code, data = _OK, outcome.SerializeToString(deterministic=True)
    return StoredOutcome(method.full_name, wanted, code, data)


def _replay(method: Method, key: str, wanted: str, found: StoredOutcome) -> Message:
    outcome = _replay_outcome(method, key, wanted, found)
    if isinstance(outcome, GatewayError):
        raise outcome
    return outcome


def _replay_outcome(
    method: Method, key: str, wanted: str, found: StoredOutcome
) -> Message | GatewayError:
    """The recorded outcome again, or ALREADY_EXISTS if the key was used for another request."""
    if found.request_hash != wanted:
        return GatewayError(
            grpc.StatusCode.ALREADY_EXISTS,
            f"{HEADER} {key!r} was already used for a different request (to {found.method}); "
            "send a new key with a new request",
        )
    if found.code == _OK:
        return method.output_type.FromString(found.outcome)
    return GatewayError.from_status(status_pb2.Status.FromString(found.outcome))
