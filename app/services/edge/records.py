"""How the edge controller reads and writes its objects, and how a request is refused.

Besides the ``edgeproto.*`` kinds (see :mod:`~app.services.edge.kinds`), three internal kinds::

    kind                   key                      message     holds
    edge.progress          <Type>/<object key>      Struct      an operation the simulated CRM
                                                                is carrying out (action, state,
                                                                step the state was entered)
    edge.controller_lease  <controller addr>        Timestamp   a replica's last heartbeat
    edge.node_controller   <node key>               ControllerKey  the replica a peer is on
    edge.demo              seeded                   (empty)     the demo world was seeded
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

import app.services.edge.kinds as k
from app.store import Reader, Writer

PROGRESS = "edge.progress"
CONTROLLER_LEASE = "edge.controller_lease"
NODE_CONTROLLER = "edge.node_controller"
DEMO_MARKER = ("edge.demo", "seeded")


async def load(reader: Reader, kind: k.EdgeType, key: Message) -> Any | None:
    """The stored object of ``kind`` with ``key``, or None."""
    record = await reader.get(kind.kind, k.key_string(key))
    return None if record is None else kind.parse(record.data)


async def load_all(reader: Reader, kind: k.EdgeType) -> list[Any]:
    """Every stored object of ``kind``, in key order."""
    return [kind.parse(r.data) for r in await reader.list(kind.kind)]


async def put(tx: Writer, kind: k.EdgeType, obj: Message) -> None:
    """Create or replace ``obj``."""
    key = kind.store_key(obj)
    if await tx.get(kind.kind, key) is None:
        await tx.create(kind.kind, key, obj)
    else:
        await tx.update(kind.kind, key, obj)


async def remove(tx: Writer, kind: k.EdgeType, key: Message) -> bool:
    """Delete the object of ``kind`` with ``key`` if it exists; whether it did."""
    store_key = k.key_string(key)
    if await tx.get(kind.kind, store_key) is None:
        return False
    await tx.delete(kind.kind, store_key)
    return True


def progress_key(kind: k.EdgeType, obj: Message) -> str:
    """The key of the progress record of ``obj``."""
    return f"{kind.name}/{kind.store_key(obj)}"
