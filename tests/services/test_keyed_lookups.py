"""A lookup by a whole key is a primary-key read: with 10,000 objects of its kind stored it reads
as many rows from the store as with 10 (counted, not timed). So is a lookup through a secondary
index: the runtime's InspectPod finds the instances that ran the pod's image by an index."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, insert

from app.services.edge import key_index, kinds
from app.services.kudo.placement import Capacity
from app.services.kudo.records import BY_IMAGE, INSTANCE, InstanceRecord
from app.services.rkt.service import image_id
from app.store import ObjectStore
from app.store.tables import ObjectIndex, StoredObject, core_table, utc_now
from gen.cnct.kaas.api import api_pb2
from gen.edgeproto import cloudlet_pb2, flavor_pb2, operator_pb2
from tests.harness import run, running

CLUSTER_KIND = "kaas.cluster"


# Set only while a lookup runs, in its task: the server's background work is not counted.
_counting: ContextVar[list[int] | None] = ContextVar("counting", default=None)


def count_rows_read(store: ObjectStore) -> None:
    """Count the records the store hands back (every row read) to calls made under _counting."""
    get, list_, list_where = store.get, store.list, store.list_where

    async def counted_get(kind: str, key: str) -> Any:
        record = await get(kind, key)
        counter = _counting.get()
        if counter is not None and record is not None:
            counter.append(1)
        return record

    async def counted_list(kind: str, prefix: str = "") -> Any:
        records = await list_(kind, prefix)
        counter = _counting.get()
        if counter is not None:
            counter.extend([1] * len(records))
        return records

    async def counted_list_where(kind: str, index: str, value: str) -> Any:
        records = await list_where(kind, index, value)
        counter = _counting.get()
        if counter is not None:
            counter.extend([1] * len(records))
        return records

    store.get = counted_get  # type: ignore[method-assign]
    store.list = counted_list  # type: ignore[method-assign]
    store.list_where = counted_list_where  # type: ignore[method-assign]


def _insert_all(conn: Connection, count: int) -> None:
    # Straight into the objects table in two statements (no event log entries: nothing needs to
    # hear of them), so seeding 20,000 objects stays quick on PostgreSQL too.
    now = utc_now()
    flavors = [
        flavor_pb2.Flavor(key=flavor_pb2.FlavorKey(name=f"flavor-{n:05}"), ram=1024)
        for n in range(count)
    ]
    clusters = [api_pb2.ClusterDetailItem(name=f"cluster-{n:05}") for n in range(count)]
    rows = [(kinds.FLAVOR.kind, kinds.FLAVOR.store_key(f), f.SerializeToString()) for f in flavors]
    rows += [(CLUSTER_KIND, c.name, c.SerializeToString()) for c in clusters]
    # Instances: each runs an image of its own, except the last two, which share one.
    instances = [_instance(n, f"docker://example/app-{min(n, count - 2)}:1") for n in range(count)]
    rows += [(INSTANCE, i.id, i.to_bytes()) for i in instances]
    # Cloudlets of one operator each: a Show naming the operator alone is part of the key.
    cloudlets = [
        cloudlet_pb2.Cloudlet(
            key=cloudlet_pb2.CloudletKey(
                operator_key=operator_pb2.OperatorKey(name=f"op-{n:05}"), name=f"cl-{n:05}"
            )
        )
        for n in range(count)
    ]
    rows += [
        (kinds.CLOUDLET.kind, kinds.CLOUDLET.store_key(c), c.SerializeToString()) for c in cloudlets
    ]
    conn.execute(
        insert(core_table(StoredObject)),
        [
            {
                "kind": kind,
                "key": key,
                "data": data,
                "revision": 1,
                "created_at": now,
                "updated_at": now,
            }
            for kind, key, data in rows
        ],
    )
    conn.execute(
        insert(core_table(ObjectIndex)),
        [{"kind": INSTANCE, "name": BY_IMAGE, "value": image_id(i), "key": i.id} for i in instances]
        + [
            {"kind": kinds.CLOUDLET.kind, "name": key_index.INDEX, "value": v, "key": key}
            for c in cloudlets
            for key in [kinds.CLOUDLET.store_key(c)]
            for v in key_index.entries(c.key)
        ],
    )


def _instance(n: int, uri: str) -> InstanceRecord:
    return InstanceRecord(
        id=f"instance-{n:05}",
        name=f"app-{n}",
        uri=uri,
        environment=(),
        ports=(),
        limit=Capacity(cpu=1, memory=64, disk=1),
        created_ns=1,
    )


async def _seed(store: ObjectStore, count: int) -> None:
    await store.database.write(_insert_all, count)


async def _rows_for(lookup: Callable[[], Awaitable[None]]) -> int:
    rows: list[int] = []
    token = _counting.set(rows)
    try:
        await lookup()  # the in-process HTTP client runs the app in this task
    finally:
        _counting.reset(token)
    return len(rows)


@pytest.mark.parametrize("stored", [10, 10_000])
def test_keyed_lookups_read_one_row_however_many_objects_are_stored(
    tmp_path: Path, stored: int, store_url: str
):
    async def scenario() -> None:
        async with running(tmp_path, sim_nodes=0, database_url=store_url) as server:
            assert server.portico.store is not None
            await _seed(server.portico.store, stored)
            count_rows_read(server.portico.store)
            headers = {"authorization": f"Bearer {await server.login()}"}

            async def show_flavor() -> None:
                reply = await server.http.post(
                    "/show/flavor", json={"key": {"name": "flavor-00007"}}, headers=headers
                )
                assert reply.status_code == 200, reply.text
                assert reply.text.count("flavor-00007") == 1

            async def get_cluster() -> None:
                reply = await server.http.get(
                    "/api/v1/cluster", params={"name": "cluster-00007"}, headers=headers
                )
                assert reply.status_code == 200, reply.text

            async def stop_instance() -> None:  # the scheduler, by id
                reply = await server.http.post(
                    "/v1/scheduler/instances/instance-00007:stop", json={}, headers=headers
                )
                # Found by id (and refused: it was never placed, so there is nothing to stop).
                assert "an instance that is SCHEDULING" in reply.text, reply.text

            async def inspect_pod() -> None:  # the runtime, by id; its image by the index
                last = f"instance-{stored - 1:05}"
                reply = await server.http.get(f"/v1/runtime/pods/{last}", headers=headers)
                assert reply.status_code == 200, reply.text

            async def show_cloudlets_of_operator() -> None:  # part of the key: the index
                reply = await server.http.post(
                    "/show/cloudlet",
                    json={"key": {"operator_key": {"name": "op-00007"}}},
                    headers=headers,
                )
                assert reply.status_code == 200, reply.text
                assert reply.text.count("cl-00007") == 1

            assert await _rows_for(show_flavor) == 1
            assert await _rows_for(show_cloudlets_of_operator) == 1
            assert await _rows_for(get_cluster) == 1
            assert await _rows_for(stop_instance) == 1
            # The pod itself, then the two instances that ran its image.
            assert await _rows_for(inspect_pod) == 3

            async def show_by_other_field() -> None:
                reply = await server.http.post("/show/flavor", json={"ram": 1024}, headers=headers)
                assert reply.text.count("flavor-") == stored

            # A filter on a field outside the key still reads them all (no index on ram).
            assert await _rows_for(show_by_other_field) == stored

    run(scenario())
