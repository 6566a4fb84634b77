"""The yardsticks: a bare Starlette route and a raw ASGI callable returning fixed JSON bytes,
and the floor of a durable create.

``BENCH_BODY_FILE`` names the file holding the bytes; run with
``python -m uvicorn tests.bench.baseline:app`` (or ``:raw``, ``:create``) ``--workers N``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from app.store import ObjectStore
from app.store.engine import configure_sqlite_connection

BODY = Path(os.environ.get("BENCH_BODY_FILE", "/dev/null")).read_bytes()


async def version(request: object) -> Response:
    """The same bytes Portico answers for ``GET /api/v1/version``."""
    return Response(BODY, media_type="application/json")


app = Starlette(routes=[Route("/api/v1/version", version)])


async def raw(scope: dict, receive: object, send: object) -> None:
    """The floor: a minimal ASGI callable answering the same bytes, no framework at all."""
    if scope["type"] != "http":
        return
    await send(RAW_START)  # type: ignore[operator]
    await send({"type": "http.response.body", "body": BODY})  # type: ignore[operator]


RAW_START = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(BODY))],
}


# -- the floor of (c): a create stored durably, with nothing else --------------------------------
# What any Python server pays for a durable create here: uvicorn, reading and parsing the JSON
# body, and the rows Portico writes for one (the cluster's status and its spec, each an object
# and an event, and the machine count reserved) on Portico's own schema, committed with the
# writes of the same loop turn in one fsynced transaction, the reply sent once it is durable.
# No gate, no field rules, no protobuf, no reconciler. ``BENCH_DATA_DIR`` holds the database.

_SCHEMA_LOCK = asyncio.Lock()
_EVENT = 'INSERT INTO event_log (kind, "key", type, data, "at") VALUES (?, ?, ?, ?, ?)'
_OBJECT = (
    'INSERT INTO stored_object (kind, "key", data, revision, created_at, updated_at) '
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
_RESERVE = "UPDATE store_meta SET value = value + ? WHERE name = ? RETURNING value"
_RESERVED = "kaas.reserved_machines"


class _TurnCommits:
    """Every write of one event-loop turn in one transaction, committed (fsynced) on a thread;
    writes arriving meanwhile wait for the next turn."""

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        configure_sqlite_connection(self.conn, busy_timeout=5.0)
        self.conn.execute("INSERT OR IGNORE INTO store_meta VALUES (?, 0)", (_RESERVED,))
        self._open = False
        self._members: list[asyncio.Future[None]] = []
        self._committing: asyncio.Future[None] | None = None
        self._finishing: asyncio.Task[None] | None = None

    async def write(self, work: Callable[[sqlite3.Connection], bool]) -> bool:
        """``work``'s answer once what it wrote is durable."""
        while self._committing is not None:
            await asyncio.shield(self._committing)
        loop = asyncio.get_running_loop()
        if not self._open:
            self.conn.execute("BEGIN IMMEDIATE")
            self._open = True
            loop.call_soon(self._commit)  # after every writer already woken in this turn
        answer = work(self.conn)
        durable = loop.create_future()
        self._members.append(durable)
        await durable
        return answer

    def _commit(self) -> None:
        loop = asyncio.get_running_loop()
        members, self._members = self._members, []
        self._committing = loop.create_future()
        self._finishing = loop.create_task(self._finish(members, self._committing))

    async def _finish(
        self, members: list[asyncio.Future[None]], done: asyncio.Future[None]
    ) -> None:
        failure: Exception | None = None
        try:
            await asyncio.to_thread(self.conn.execute, "COMMIT")
        except Exception as error:  # every member of the turn hears it
            failure = error
            self.conn.execute("ROLLBACK")
        self._open, self._committing = False, None
        done.set_result(None)
        for member in members:
            if failure is None:
                member.set_result(None)
            else:
                member.set_exception(failure)


_turns: _TurnCommits | None = None


async def _store() -> _TurnCommits:
    global _turns
    async with _SCHEMA_LOCK:
        if _turns is None:
            path = Path(os.environ["BENCH_DATA_DIR"]) / "floor.db"
            async with ObjectStore.open(f"sqlite:///{path}"):
                pass  # Portico's schema, tables and indexes
            _turns = _TurnCommits(str(path))
    return _turns


async def create(scope: dict, receive: Any, send: Any) -> None:
    """The floor of (c): ``POST`` a cluster's JSON, answered once its rows are durable
    (anything else as :func:`raw` answers, such as the readiness probe)."""
    if scope["type"] != "http" or scope["method"] != "POST":
        await raw(scope, receive, send)
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    store = _turns or await _store()
    name = json.loads(body)["name"]
    now = datetime.now(UTC).isoformat(" ")
    status = json.dumps({"name": name, "status": "PROVISIONING"}).encode()

    def insert(conn: sqlite3.Connection) -> bool:
        # Each create may fail alone (a name taken) and the turn's others still commit.
        conn.execute("SAVEPOINT create_one")
        for kind, data in (("kaas.cluster", status), ("kaas.cluster_spec", body)):
            revision = conn.execute(_EVENT, (kind, name, "created", data, now)).lastrowid
            if conn.execute(_OBJECT, (kind, name, data, revision, now, now)).rowcount == 0:
                conn.execute("ROLLBACK TO create_one")
                conn.execute("RELEASE create_one")
                return False
        conn.execute(_RESERVE, (8, _RESERVED)).fetchall()
        conn.execute("RELEASE create_one")
        return True

    created = await store.write(insert)
    reply = b'{"ok":true,"cluster":%s}' % status if created else b'{"code":6}'
    await send(
        {
            "type": "http.response.start",
            "status": 200 if created else 409,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": reply})
