"""The simulated Ceph cluster: consistent numbers at every step, moving with the clock."""

from __future__ import annotations

import json
import math
from datetime import UTC

import pytest

from app.services.koor.replies import (
    SimulatedStorageCluster,
    StorageProvider,
    cluster_nodes,
    cluster_radar,
    cluster_resources,
    cluster_stats,
    format_bytes,
    koor_cluster,
    resource_inventory,
)
from app.sim.clock import ManualClock
from app.sim.storage import StorageSnapshot, observe
from app.sim.storage_spec import FULL_RATIO, OBJECT_SIZE, POOLS, StorageSpec
from gen.resources.stats import stats_pb2

CLOCK = ManualClock(step_seconds=60)
STEPS = 2000
# A cluster in constant trouble, so every outage path (node reboots, lost quorum, inactive PGs,
# overlapping crashes) is exercised within a short run.
STORMY = StorageSpec(
    seed=7,
    created_step=500,
    node_count=3,
    osds_per_node=2,
    mon_count=3,
    outage_window_steps=60,
    daemon_crash_chance=0.4,
    node_reboot_chance=0.2,
    crash_max_steps=20,
    reboot_max_steps=30,
)
SPECS = [StorageSpec(seed=0), StorageSpec(seed=1, created_step=10_000, node_count=5), STORMY]


def check_invariants(s: StorageSnapshot) -> None:
    """Everything a dashboard user could cross-check between the five answers."""
    stats = cluster_stats(s, CLOCK)
    nodes = cluster_nodes(s, CLOCK)
    radar = cluster_radar(s)
    resources, deployments = resource_inventory(s)
    usage, services = stats.data.usage, stats.services

    assert usage.used + usage.available == usage.total == s.spec.raw_capacity
    assert 0 < usage.used <= FULL_RATIO * usage.total
    assert 0 <= services.osd.osd_up <= services.osd.osd_in <= services.osd.osd_count

    assert int(cluster_resources(s).nodes) == len(nodes) == s.spec.node_count
    assert int(koor_cluster(s).status.total_resources.nodes) == len(nodes)
    for i, node in enumerate(nodes):
        on_node = [up for d, up in zip(s.daemons, s.daemons_up, strict=True) if d.node == i]
        if node.status == stats_pb2.RESOURCE_NOT_READY:
            assert not any(on_node), "a daemon cannot run on a node that is down"

    assert all(n >= 0 for n in s.pg_states.values())
    assert s.pg_total == sum(pgs for _, pgs in POOLS)
    assert stats.data.pools.pgs.active_clean == s.pg_states["active+clean"]
    assert stats.data.pools.pools == len(POOLS)
    if all(s.daemons_up) and s.pg_states["active+recovering"] == 0:
        assert s.pg_states["active+clean"] == s.pg_total
    if len(s.up("osd")) < s.count("osd"):
        assert s.pg_states["active+clean"] < s.pg_total

    quorum = services.mon.quorum.split(",") if services.mon.quorum else []
    assert set(quorum) <= {d.name for d in s.daemons if d.kind == "mon"}
    assert not quorum or len(quorum) > services.mon.daemon_count // 2
    assert services.mgr.active not in services.mgr.standbys
    assert bool(services.mgr.active) + len(services.mgr.standbys) == len(s.up("mgr"))
    assert 0 <= services.mds.hot_standby_count <= max(0, services.mds.daemons_up - 1)
    assert services.mds.daemons_up <= 2
    assert services.rgw.host_count <= services.rgw.active_daemon <= 2

    for field in radar.DESCRIPTOR.fields:
        assert 0.0 <= getattr(radar, field.name) <= 100.0, field.name
    assert math.isclose(radar.capacity_available, 100 * usage.available / usage.total, rel_tol=1e-6)
    assert math.isclose(
        radar.nodes_health,
        100 * sum(n.status == stats_pb2.RESOURCE_READY for n in nodes) / len(nodes),
        rel_tol=1e-6,
    )
    assert math.isclose(
        radar.reliability, 100 * stats.data.pools.pgs.active_clean / s.pg_total, rel_tol=1e-6
    )
    ready = sum(d.status == stats_pb2.RESOURCE_READY for d in deployments[2:])
    assert math.isclose(radar.cluster_health, 100 * ready / len(s.daemons), rel_tol=1e-6)

    assert stats.data.objects.object_count * OBJECT_SIZE <= s.stored_bytes
    assert stats.status == s.status
    assert (s.status == "HEALTH_OK") == (not s.health_checks)
    assert len(stats.crashes) == len(s.crashes)
    for crash in s.crashes:
        assert s.step - s.spec.steps_per_day < crash.step <= s.step
    now = CLOCK.time_of(s.step)
    for stamp in (
        services.mon.updated_at,
        services.mgr.updated_at,
        services.osd.osd_up_updated_at,
        services.osd.osd_in_updated_at,
    ):
        assert CLOCK.time_of(s.spec.created_step) <= stamp.ToDatetime(now.tzinfo) <= now
    assert len(resources) == 5
    assert len(deployments) == 2 + len(s.daemons)


@pytest.mark.parametrize("spec", SPECS, ids=["default", "five-nodes", "stormy"])
def test_invariants_hold_at_every_step(spec: StorageSpec):
    previous_stored = 0
    for step in range(spec.created_step, spec.created_step + STEPS):
        s = observe(spec, step)
        check_invariants(s)
        # Within the retention window data only accumulates.
        assert s.stored_bytes >= previous_stored
        previous_stored = s.stored_bytes


def test_the_stormy_cluster_visits_every_health_state():
    seen: dict[str, set[str]] = {}
    for step in range(STORMY.created_step, STORMY.created_step + STEPS):
        s = observe(STORMY, step)
        seen.setdefault(s.status, set()).update(s.health_checks)
    assert set(seen) == {"HEALTH_OK", "HEALTH_WARN", "HEALTH_ERR"}
    assert {"MON_QUORUM_LOST", "PG_AVAILABILITY"} <= seen["HEALTH_ERR"]
    assert {"OSD_DOWN", "OSD_HOST_DOWN", "PG_DEGRADED", "RECENT_CRASH"} <= seen["HEALTH_WARN"]


def test_the_same_spec_and_step_give_the_same_answers():
    restored = StorageSpec.from_dict(json.loads(json.dumps(StorageSpec(seed=3).to_dict())))
    for step in (0, 17, 999, 123_456):
        first, again = observe(StorageSpec(seed=3), step), observe(restored, step)
        assert cluster_stats(first, CLOCK) == cluster_stats(again, CLOCK)
        assert cluster_nodes(first, CLOCK) == cluster_nodes(again, CLOCK)
        assert resource_inventory(first) == resource_inventory(again)


def test_different_seeds_give_different_clusters():
    a, b = StorageSpec(seed=1), StorageSpec(seed=2)
    assert a.fsid != b.fsid
    assert [observe(a, t).daemons_up for t in range(3000)] != [
        observe(b, t).daemons_up for t in range(3000)
    ]


def test_usage_grows_as_data_is_written_and_levels_off_after_retention():
    spec = StorageSpec(seed=0, retention_days=2)
    day = spec.steps_per_day
    stored = [observe(spec, t).stored_bytes for t in range(0, 5 * day, 60)]
    assert stored[0] < stored[len(stored) // 5] < stored[2 * len(stored) // 5]
    # Past the retention window, a whole day of new data replaces a whole day of expired data.
    late = observe(spec, 4 * day).stored_bytes
    assert math.isclose(observe(spec, 3 * day).stored_bytes, late, rel_tol=1e-9)
    # Growth matches the reported write rate: new data = retained share of bytes written.
    first_hour = observe(spec, 60).stored_bytes - observe(spec, 0).stored_bytes
    written = sum(observe(spec, t).client_write for t in range(60)) * 60
    assert math.isclose(first_hour, spec.retained_write_fraction * written, rel_tol=0.02)


def test_a_cluster_never_fills_beyond_cephs_full_ratio():
    spec = StorageSpec(initial_fill=0.9, retained_write_fraction=1.0)
    s = observe(spec, 10 * spec.steps_per_day)
    assert s.raw_used <= FULL_RATIO * s.raw_total
    assert "OSD_FULL" in s.health_checks and s.status == "HEALTH_ERR"


def test_client_io_follows_a_daily_curve():
    spec = StorageSpec(daemon_crash_chance=0, node_reboot_chance=0)
    day = spec.steps_per_day
    afternoon, night = observe(spec, day * 15 // 24), observe(spec, day * 3 // 24)
    assert afternoon.client_read > 2 * night.client_read
    assert math.isclose(observe(spec, 5 * day + 100).client_write, observe(spec, 100).client_write)
    iops = cluster_stats(afternoon, CLOCK).iops
    assert iops.client_read == "192.0 MiB/s"
    assert iops.client_read_ops == "12288 op/s"
    assert iops.client_write_ops.endswith(" op/s")


def test_a_crashed_daemon_comes_back_and_its_crash_is_reported_for_a_day():
    spec = StorageSpec(seed=1, node_reboot_chance=0)
    hour, day = spec.steps_per_day // 24, spec.steps_per_day
    crashed_at = next(t for t in range(5000) if observe(spec, t).crashes)
    s = observe(spec, crashed_at)
    [crash] = s.crashes
    daemon = next(d for d in s.daemons if d.id == crash.daemon)
    assert crash.step == crashed_at
    assert daemon not in s.up(daemon.kind)
    assert s.status == "HEALTH_WARN" and "RECENT_CRASH" in s.health_checks

    back = next(t for t in range(crashed_at, crashed_at + 100) if all(observe(spec, t).daemons_up))
    assert back - crashed_at <= spec.crash_max_steps
    description = cluster_stats(s, CLOCK).crashes[0].description
    assert description.startswith(CLOCK.time_of(crashed_at).strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert f"{crash.daemon} on {crash.node}: " in description

    assert "RECENT_CRASH" not in observe(spec, crashed_at + hour).health_checks
    assert crash in observe(spec, crashed_at + day - 1).crashes
    assert crash not in observe(spec, crashed_at + day).crashes


def test_a_rebooting_node_takes_its_daemons_down_without_crash_reports():
    spec = StorageSpec(seed=3, daemon_crash_chance=0, node_reboot_chance=0.2)
    rebooting = next(t for t in range(5000) if not all(observe(spec, t).nodes_up))
    s = observe(spec, rebooting)
    node = s.nodes_up.index(False)
    assert all(not up for d, up in zip(s.daemons, s.daemons_up, strict=True) if d.node == node)
    assert "OSD_HOST_DOWN" in s.health_checks
    assert not s.crashes
    assert cluster_nodes(s, CLOCK)[node].status == stats_pb2.RESOURCE_NOT_READY


def test_an_osd_down_for_long_is_marked_out_and_in_again_when_back():
    spec = StorageSpec(seed=2, osd_out_steps=3, daemon_crash_chance=0.2)
    states = [cluster_stats(observe(spec, t), CLOCK).services.osd for t in range(3000)]
    out_at = next(t for t, osd in enumerate(states) if osd.osd_in < osd.osd_count)
    assert states[out_at - 1].osd_in == states[out_at - 1].osd_count
    assert states[out_at - 3].osd_up < states[out_at - 3].osd_count  # down before it was out
    assert states[out_at].osd_in_updated_at.ToDatetime(UTC) == CLOCK.time_of(out_at)
    back = next(t for t in range(out_at, 3000) if states[t].osd_in == states[t].osd_count)
    assert states[back].osd_in_updated_at.ToDatetime(UTC) == CLOCK.time_of(back)


def test_the_radar_reads_a_healthy_cluster_as_full_marks_but_capacity():
    radar = cluster_radar(observe(StorageSpec(daemon_crash_chance=0, node_reboot_chance=0), 50))
    assert (radar.cluster_health, radar.nodes_health, radar.stability, radar.reliability) == (
        100,
        100,
        100,
        100,
    )
    assert 60 < radar.capacity_available < 70


def test_the_radar_drops_while_daemons_are_down():
    spec = StorageSpec(seed=5, daemon_crash_chance=0.2)
    trouble = next(t for t in range(5000) if not all(observe(spec, t).daemons_up))
    radar = cluster_radar(observe(spec, trouble))
    assert radar.cluster_health < 100 and radar.stability < 100


def test_recovery_follows_an_osd_coming_back():
    spec = StorageSpec(seed=4, daemon_crash_chance=0.2)
    recovering = [t for t in range(3000) if observe(spec, t).pg_states["active+recovering"]]
    assert recovering
    t = recovering[0]
    assert observe(spec, t - 1).pg_states["active+undersized+degraded"] > 0


def test_nodes_list_their_ceph_daemons_and_addresses():
    nodes = cluster_nodes(observe(StorageSpec(), 0), CLOCK)
    assert [n.name for n in nodes] == [f"koor-cluster-node-{i}" for i in range(1, 5)]
    assert list(nodes[0].roles) == ["mgr", "mon", "osd"]
    assert nodes[0].internal_ip == "10.30.0.11"
    assert len({n.internal_ip for n in nodes}) == len(nodes)


def test_the_koor_cluster_reports_resources_and_versions():
    koor = koor_cluster(observe(StorageSpec(), 0))
    assert (koor.name, koor.namespace) == ("koor-cluster", "koor-operator-system")
    assert koor.spec.upgrade_options.mode == stats_pb2.UPGRADE_MODE_NOTIFY
    total = koor.status.total_resources
    assert (total.nodes, total.cpu, total.memory, total.storage) == (
        "4",
        "64",
        "256.0 GiB",
        "800.0 GiB",
    )
    assert koor.status.meets_minimum_resources
    assert koor.status.current_versions.kube == "1.31.2"
    assert koor.status.latest_versions.ceph.image_uri == "docker://quay.io/ceph/ceph:v18.2.4"
    assert koor.status.latest_versions.ceph.image_hash.startswith("sha256:")


def test_resources_name_the_rook_objects_and_their_health():
    resources, deployments = resource_inventory(observe(StorageSpec(), 0))
    assert [r.kind for r in resources] == [
        "KoorCluster",
        "CephCluster",
        "CephBlockPool",
        "CephFilesystem",
        "CephObjectStore",
    ]
    assert all(r.reliability == stats_pb2.RELIABILITY_OK for r in resources)
    names = {d.name for d in deployments}
    assert {"rook-ceph-operator", "rook-ceph-mon-a", "rook-ceph-osd-11"} <= names
    assert all(d.replicas == 1 for d in deployments)


def test_the_provider_follows_its_clock():
    clock = ManualClock(step_seconds=60)
    provider: StorageProvider = SimulatedStorageCluster(StorageSpec(), clock)
    night = provider.cluster_stats().iops.client_read
    clock.advance(12 * 60)
    assert provider.cluster_stats().iops.client_read != night
    assert len(provider.cluster_nodes()) == 4
    assert provider.cluster_radar().capacity_available > 0
    assert provider.koor_cluster().name == "koor-cluster"
    assert len(provider.resource_inventory()[1]) > 2


def test_a_fresh_cluster_has_the_configured_fill():
    s = observe(StorageSpec(initial_fill=0.3), 0)
    assert math.isclose(s.raw_used / s.raw_total, 0.3 + 0.01, rel_tol=1e-6)
    assert cluster_stats(s, CLOCK).data.objects.size == format_bytes(s.stored_bytes)


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (5 * 1024**4, "5.0 TiB")],
)
def test_sizes_read_like_ceph_prints_them(value, text):
    assert format_bytes(value) == text


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"node_count": 2}, "node_count"),
        ({"mon_count": 2}, "mon_count"),
        ({"daily_swing": 1.0}, "daily_swing"),
        ({"crash_max_steps": 800}, "crash_max_steps"),
        ({"daemon_crash_chance": 2}, "daemon_crash_chance"),
    ],
)
def test_an_impossible_spec_is_refused(change, problem):
    with pytest.raises(ValueError, match=problem):
        StorageSpec(**change)
