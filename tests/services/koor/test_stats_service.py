"""``stats.StatsService``: consistent answers over many clock steps, a persisted cluster, both
transports."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from app.gateway.openapi.proto_comments import source_comments
from app.services.koor.service import STORAGE_CLUSTER_KEY, STORAGE_SPEC, StatsService
from app.sim.clock import ManualClock
from app.sim.storage_spec import POOLS
from app.store import ObjectStore
from gen.resources.stats import stats_pb2 as resources
from gen.stats import stats_pb2, stats_pb2_grpc
from tests.harness import run, running

ROOT = Path(__file__).resolve().parents[3]
PG_TOTAL = sum(pg_num for _, pg_num in POOLS)
RPCS = {
    "GetClusterStats": ("/v1/stats/cluster", stats_pb2.GetClusterStatsRequest),
    "GetClusterResources": ("/v1/stats/resources", stats_pb2.GetClusterResourcesRequest),
    "GetClusterNodes": ("/v1/stats/nodes", stats_pb2.GetClusterNodesRequest),
    "GetClusterRadar": ("/v1/stats/radar", stats_pb2.GetClusterRadarRequest),
    "GetKoorCluster": ("/v1/stats/koor-cluster", stats_pb2.GetKoorClusterRequest),
}


async def _answers(service: StatsService) -> dict[str, Any]:
    """Every RPC's answer at the clock's current step (the context is only used on errors)."""
    return {
        name: await getattr(service, name)(request(), None) for name, (_, request) in RPCS.items()
    }


def _check_consistent(a: dict[str, Any]) -> None:
    stats = a["GetClusterStats"].stats
    usage = stats.data.usage
    assert usage.used + usage.available == usage.total
    assert 0 < usage.used < usage.total
    osd = stats.services.osd
    assert 0 <= osd.osd_in <= osd.osd_count and 0 <= osd.osd_up <= osd.osd_count
    assert stats.services.mon.daemon_count == 3
    quorum = [m for m in stats.services.mon.quorum.split(",") if m]
    assert len(quorum) <= 3
    assert 0 <= stats.data.pools.pgs.active_clean <= PG_TOTAL
    assert stats.status in ("HEALTH_OK", "HEALTH_WARN", "HEALTH_ERR")
    if stats.status == "HEALTH_OK":
        assert osd.osd_up == osd.osd_count and len(quorum) == 3

    nodes = a["GetClusterNodes"].nodes
    koor = a["GetKoorCluster"].koor_cluster
    assert int(koor.status.total_resources.nodes) == len(nodes)
    assert koor.status.current_versions.ceph

    resources_reply = a["GetClusterResources"]
    daemons = [d for d in resources_reply.deployments if d.name.startswith("rook-ceph-")]
    daemons = [d for d in daemons if d.name != "rook-ceph-operator"]
    osd_deployments = [d for d in daemons if d.name.startswith("rook-ceph-osd-")]
    assert len(osd_deployments) == osd.osd_count
    assert sum(d.status == resources.RESOURCE_READY for d in osd_deployments) == osd.osd_up

    radar = a["GetClusterRadar"].radar
    for axis in (
        "cluster_health",
        "nodes_health",
        "capacity_available",
        "stability",
        "reliability",
    ):
        assert 0.0 <= getattr(radar, axis) <= 100.0
    ready = sum(d.status == resources.RESOURCE_READY for d in daemons)
    assert math.isclose(radar.cluster_health, 100 * ready / len(daemons), rel_tol=1e-6)
    ready_nodes = sum(n.status == resources.RESOURCE_READY for n in nodes)
    assert math.isclose(radar.nodes_health, 100 * ready_nodes / len(nodes), rel_tol=1e-6)
    assert math.isclose(radar.capacity_available, 100 * usage.available / usage.total, rel_tol=1e-6)
    assert math.isclose(
        radar.reliability, 100 * stats.data.pools.pgs.active_clean / PG_TOTAL, rel_tol=1e-6
    )


def _with_store(tmp_path: Path, scenario) -> None:
    async def main() -> None:
        async with ObjectStore.open(f"sqlite:///{tmp_path / 'koor.db'}") as store:
            await scenario(store)

    run(main())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_answers_are_consistent_at_every_step_over_days(tmp_path, seed):
    async def scenario(store: ObjectStore) -> None:
        clock = ManualClock(step_seconds=60, start=10_000)
        service = StatsService(store, clock, seed=seed)
        statuses = set()
        used = []
        for _ in range(600):  # about four simulated days in uneven strides
            clock.advance(1 + (clock.now() * 7919) % 17)
            answers = await _answers(service)
            _check_consistent(answers)
            statuses.add(answers["GetClusterStats"].stats.status)
            used.append(answers["GetClusterStats"].stats.data.usage.used)
        assert "HEALTH_OK" in statuses
        assert len(set(used)) > 100  # the numbers move with the clock

    _with_store(tmp_path, scenario)


def test_the_storage_cluster_is_stored_once_and_resumes_after_a_restart(tmp_path):
    async def scenario(store: ObjectStore) -> None:
        first = StatsService(store, ManualClock(start=5000), seed=42)
        before = await _answers(first)
        record = await store.get(STORAGE_SPEC, STORAGE_CLUSTER_KEY)
        assert record is not None
        # A restarted server with another seed setting finds the stored cluster.
        second = StatsService(store, ManualClock(start=5000), seed=7)
        assert await _answers(second) == before
        assert await store.get(STORAGE_SPEC, STORAGE_CLUSTER_KEY) == record

    _with_store(tmp_path, scenario)


def test_every_rpc_answers_on_both_transports(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            headers = {"authorization": f"Bearer {token}"}
            stub = stats_pb2_grpc.StatsServiceStub(server.channel)
            for name, (path, request) in RPCS.items():
                reply = await server.http.get(path, headers=headers)
                assert reply.status_code == 200, reply.text
                # Numbers at the clock's step, which no write marks: no ETag (a 304 would lie).
                assert "etag" not in reply.headers
                over_grpc = await getattr(stub, name)(
                    request(), metadata=(("authorization", f"Bearer {token}"),)
                )
                assert set(reply.json()) == set(
                    json_format.MessageToDict(over_grpc, preserving_proto_field_name=True)
                )
            stats = (await server.http.get("/v1/stats/cluster", headers=headers)).json()["stats"]
            usage = stats["data"]["usage"]
            assert int(usage["used"]) + int(usage["available"]) == int(usage["total"])
            koor = (await server.http.get("/v1/stats/koor-cluster", headers=headers)).json()
            assert koor["koor_cluster"]["name"] == "koor-cluster"
            # A viewer may read statistics.
            viewer = await server.add_account("watcher", "viewer")
            reply = await server.http.get(
                "/v1/stats/radar", headers={"authorization": f"Bearer {viewer}"}
            )
            assert reply.status_code == 200
            assert set(reply.json()["radar"]) == {
                "cluster_health",
                "nodes_health",
                "capacity_available",
                "stability",
                "reliability",
            }

    run(scenario())


# The seed's validation rules, as its field comments state them.
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
)
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$")  # RFC 3986: an absolute URI
# robfig/cron v3's standard parser: an optional CRON_TZ, then five fields or a descriptor.
_CRON_FIELD = r"(\*|\d+(-\d+)?)(/\d+)?(,(\*|\d+(-\d+)?)(/\d+)?)*|[A-Za-z]{3}(-[A-Za-z]{3})?"
_CRON = re.compile(
    rf"^(CRON_TZ=\S+ )?(@(yearly|annually|monthly|weekly|daily|midnight|hourly|every \S+)"
    rf"|({_CRON_FIELD})( ({_CRON_FIELD})){{4}})$"
)


def _rule_breaks(message: Message, comments: dict[str, str], where: str = "") -> list[str]:
    """Every string field whose value breaks the rule its comment declares."""
    broken = []
    for field in message.DESCRIPTOR.fields:
        path = f"{where}.{field.name}" if where else field.name
        value = getattr(message, field.name)
        if field.message_type is not None:
            items = list(value) if isinstance(value, Sequence) else [value]
            for i, item in enumerate(items):
                if isinstance(item, Message):
                    broken += _rule_breaks(item, comments, f"{path}[{i}]")
            continue
        if not isinstance(value, str):
            continue
        comment = comments.get(field.full_name, "")
        if "must be a valid semver" in comment and not _SEMVER.match(value):
            broken.append(f"{path}={value!r} (semver)")
        if comment.startswith("The URI of") and not _URI.match(value):
            broken.append(f"{path}={value!r} (URI)")
        if "Uses CRON format" in comment and not _CRON.match(value):
            broken.append(f"{path}={value!r} (CRON)")
    return broken


def test_every_value_satisfies_the_seed_validation_rules_on_both_transports(tmp_path):
    comments = source_comments(ROOT / "gen" / "portico.binpb")
    assert "URI" in comments["resources.stats.DetailedVersion.image_uri"]
    assert "CRON" in comments["resources.stats.UpgradeOptions.schedule"]
    assert _CRON.match("CRON_TZ=UTC 0 0 * * *") and not _CRON.match("every day at midnight")

    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            stub = stats_pb2_grpc.StatsServiceStub(server.channel)
            for name, (path, request) in RPCS.items():
                over_grpc = await getattr(stub, name)(
                    request(), metadata=(("authorization", f"Bearer {token}"),)
                )
                reply = await server.http.get(path, headers={"authorization": f"Bearer {token}"})
                over_rest = json_format.ParseDict(reply.json(), type(over_grpc)())
                for answer in (over_grpc, over_rest):
                    assert _rule_breaks(answer, comments) == [], name
            koor = over_rest.koor_cluster.status.latest_versions
            assert koor.ceph.image_uri.startswith("docker://quay.io/ceph/ceph:v")

    run(scenario())
