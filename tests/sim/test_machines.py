"""The simulated MaaS provider: ids, addresses, lifecycle on clock steps, faults, persistence."""

from __future__ import annotations

import ipaddress
import json
import re

import pytest

from app.services.kaas.records import machine_status
from app.sim.machine_model import Machine, MachineRequest, Phase, Role, hostname_for, system_id_for
from app.sim.machines import (
    FaultInjection,
    IpPool,
    IpPoolExhausted,
    MachineProvider,
    MachineTimings,
    MachineTransitionError,
    SimulatedMachineProvider,
)

V1, V2 = "1.31.2", "1.32.0"


def requests(cluster: str = "prod", pool: str = "workers", count: int = 3) -> list[MachineRequest]:
    return [MachineRequest(cluster, pool, i, V1) for i in range(count)]


def settle(provider: SimulatedMachineProvider, machines: list[Machine], now: int) -> list[Machine]:
    return [provider.advance(m, now) for m in machines]


def test_the_simulated_provider_satisfies_the_interface():
    provider: MachineProvider = SimulatedMachineProvider()
    assert provider.allocate([], in_use_ips=(), now=0) == []


def test_system_ids_are_six_lowercase_characters_and_stable():
    assert system_id_for("prod", "workers", 0) == "ani4bm"  # pinned: must survive restarts
    ids = {system_id_for("prod", pool, i) for pool in ("cp", "workers") for i in range(50)}
    assert len(ids) == 100
    assert all(re.fullmatch(r"[a-z0-9]{6}", i) for i in ids)


def test_hostnames_name_cluster_pool_and_index():
    assert hostname_for("prod", "gpu", 2) == "prod-gpu-2"
    machine = SimulatedMachineProvider().allocate(requests(), in_use_ips=(), now=0)[2]
    assert machine.hostname == "prod-workers-2"
    assert machine.system_id == system_id_for("prod", "workers", 2)


def test_a_machine_is_deployed_then_becomes_a_ready_node():
    provider = SimulatedMachineProvider(timings=MachineTimings(deploy_jitter_steps=0))
    [machine] = provider.allocate(
        [MachineRequest("prod", "cp", 0, V1, Role.CONTROL_PLANE)], in_use_ips=(), now=100
    )
    seen = []
    for step in range(100, 110):
        machine = provider.advance(machine, step)
        seen.append((step, machine.maas_status, machine.k8s_status))
    assert seen[:7] == [
        (100, "Allocated", "NotReady"),
        (101, "Deploying", "NotReady"),
        (102, "Deploying", "NotReady"),
        (103, "Deploying", "NotReady"),
        (104, "Deployed", "NotReady"),
        (105, "Deployed", "NotReady"),
        (106, "Deployed", "Ready"),
    ]
    assert machine.is_ready and machine.role is Role.CONTROL_PLANE and machine.k8s_version == V1


def test_machines_do_not_all_become_ready_at_the_same_step():
    provider = SimulatedMachineProvider()
    machines = provider.allocate(requests(count=20), in_use_ips=(), now=0)
    ready_at = []
    for m in machines:
        step = 0
        while not provider.advance(m, step).is_ready:
            step += 1
        ready_at.append(step)
    assert len(set(ready_at)) > 1
    assert max(ready_at) <= 1 + 3 + 2 + 2  # allocate + deploy + jitter + join


def test_advancing_step_by_step_equals_jumping_after_a_restart():
    provider = SimulatedMachineProvider(faults=FaultInjection(0.3, seed=5))
    machines = provider.allocate(requests(count=30), in_use_ips=(), now=0)
    stepped = machines
    for step in range(1, 25):
        stepped = settle(provider, stepped, step)
        if step == 12:
            stepped = [provider.upgrade(m, V2, step) if m.is_ready else m for m in stepped]
    jumped = settle(provider, machines, 12)
    jumped = [provider.upgrade(m, V2, 12) if m.is_ready else m for m in jumped]
    assert settle(provider, jumped, 24) == stepped


def test_a_persisted_machine_resumes_where_it_left_off():
    provider = SimulatedMachineProvider()
    [machine] = provider.allocate(requests(count=1), in_use_ips=(), now=0)
    machine = provider.advance(machine, 2)
    stored = json.dumps(machine.to_dict())
    restored = Machine.from_dict(json.loads(stored))
    assert restored == machine
    assert provider.advance(restored, 50).is_ready


def test_from_dict_refuses_what_is_not_a_machine():
    with pytest.raises(ValueError, match="not a stored machine"):
        Machine.from_dict({"hostname": "x"})
    data = SimulatedMachineProvider().allocate(requests(count=1), in_use_ips=(), now=0)[0].to_dict()
    with pytest.raises(ValueError, match="not a stored machine"):
        Machine.from_dict({**data, "phase": "exploded"})


def test_a_clock_that_went_back_restarts_the_phase_instead_of_stalling():
    provider = SimulatedMachineProvider(timings=MachineTimings(deploy_jitter_steps=0))
    [machine] = provider.allocate(requests(count=1), in_use_ips=(), now=1_000)
    rebased = provider.advance(machine, 10)
    assert rebased.phase is Phase.ALLOCATED and rebased.phase_started == 10
    assert provider.advance(rebased, 20).is_ready


def test_upgrade_changes_the_version_after_some_steps_with_the_node_cordoned():
    provider = SimulatedMachineProvider()
    [machine] = settle(provider, provider.allocate(requests(count=1), in_use_ips=(), now=0), 20)
    upgrading = provider.upgrade(machine, V2, 20)
    assert upgrading.k8s_status == "Ready,SchedulingDisabled"
    assert provider.advance(upgrading, 21).k8s_version == V1
    done = provider.advance(upgrading, 22)
    assert (done.k8s_version, done.k8s_status, done.maas_status) == (V2, "Ready", "Deployed")
    assert provider.upgrade(upgrading, V2, 21) == upgrading  # asking again changes nothing
    assert provider.upgrade(done, V2, 30) == done


def test_only_a_ready_machine_can_be_upgraded():
    provider = SimulatedMachineProvider()
    [machine] = provider.allocate(requests(count=1), in_use_ips=(), now=0)
    with pytest.raises(MachineTransitionError, match=r"prod-workers-0 .*Allocated"):
        provider.upgrade(machine, V2, 0)


def test_release_returns_the_machine_and_its_address():
    provider = SimulatedMachineProvider()
    [machine] = settle(provider, provider.allocate(requests(count=1), in_use_ips=(), now=0), 20)
    releasing = provider.release(machine, 20)
    assert (releasing.maas_status, releasing.k8s_status, releasing.holds_ip) == (
        "Releasing",
        "NotReady",
        True,
    )
    assert provider.release(releasing, 20) == releasing
    released = provider.advance(releasing, 21)
    assert released.phase is Phase.RELEASED and not released.holds_ip
    assert provider.release(released, 22) == released


def test_node_status_reports_what_get_cluster_nodes_status_shows():
    provider = SimulatedMachineProvider()
    [machine] = settle(provider, provider.allocate(requests(count=1), in_use_ips=(), now=0), 20)
    status = machine_status(machine)
    assert status.k8sNodeStatus == "Ready"
    assert status.k8sVersion == V1
    assert status.maasSystemId == machine.system_id
    assert status.maasHostname == "prod-workers-0"
    assert status.maasNodeStatus == "Deployed"
    assert status.maasIPAddr == "10.20.0.2"


# IP addresses


def test_addresses_are_the_lowest_free_after_the_gateway():
    assert IpPool("10.20.0.0/16").allocate(3, in_use=["10.20.0.3"]) == [
        "10.20.0.2",
        "10.20.0.4",
        "10.20.0.5",
    ]


def test_allocation_never_hands_out_an_address_in_use():
    pool = IpPool("192.168.7.0/24")
    provider = SimulatedMachineProvider(ip_pool=pool)
    in_use: set[str] = {"192.168.7.9", "192.168.7.200", "10.0.0.1"}  # one outside the pool
    for round_ in range(12):
        batch = provider.allocate(requests(f"c{round_}", count=20), in_use_ips=in_use, now=0)
        ips = [m.ip for m in batch]
        assert len(set(ips)) == len(ips)
        assert not in_use.intersection(ips)
        assert all(ipaddress.ip_address(ip) in pool.network for ip in ips)
        in_use.update(ips)
        # Release every third machine so later rounds reuse holes.
        in_use.difference_update(ips[::3])
    assert len(in_use & {str(h) for h in pool.network.hosts()}) <= pool.capacity


def test_an_exhausted_pool_raises_and_allocates_nothing():
    provider = SimulatedMachineProvider(ip_pool=IpPool("10.9.0.0/29"))  # 6 hosts, 5 for machines
    assert provider.ip_pool.capacity == 5
    in_use = [m.ip for m in provider.allocate(requests(count=4), in_use_ips=(), now=0)]
    with pytest.raises(IpPoolExhausted, match=r"10\.9\.0\.0/29 has 1 free address\(es\) of 5"):
        provider.allocate(requests("other", count=2), in_use_ips=in_use, now=0)
    [last] = provider.allocate(requests("other", count=1), in_use_ips=in_use, now=0)
    assert last.ip == "10.9.0.6"


def test_ipv6_pools_work_too():
    assert IpPool("fd00:20::/120").allocate(2, in_use=[]) == ["fd00:20::2", "fd00:20::3"]


def test_a_bad_cidr_is_refused():
    with pytest.raises(ValueError, match="not a CIDR"):
        IpPool("10.20.0.0/33")


# Fault injection


def test_without_faults_no_machine_fails():
    provider = SimulatedMachineProvider()
    machines = settle(provider, provider.allocate(requests(count=200), in_use_ips=(), now=0), 50)
    assert all(m.is_ready for m in machines)


def test_a_failure_ratio_of_one_fails_every_machine_with_a_reason():
    provider = SimulatedMachineProvider(faults=FaultInjection(1.0))
    machines = settle(provider, provider.allocate(requests(count=10), in_use_ips=(), now=0), 50)
    for m in machines:
        assert (m.maas_status, m.k8s_status) == ("Failed deployment", "NotReady")
        assert m.failure_reason.startswith(f"{m.hostname}: ")
        assert m.failure_reason.endswith("(simulated fault)")


@pytest.mark.parametrize("ratio", [0.1, 0.25, 0.5])
def test_failures_come_at_the_configured_ratio(ratio):
    provider = SimulatedMachineProvider(
        ip_pool=IpPool("10.0.0.0/8"), faults=FaultInjection(ratio, seed=42)
    )
    batch = [MachineRequest(f"c{i // 20}", "w", i % 20, V1) for i in range(3000)]
    machines = settle(provider, provider.allocate(batch, in_use_ips=(), now=0), 50)
    failed = sum(m.is_failed for m in machines)
    assert abs(failed / len(machines) - ratio) < 0.03
    assert failed + sum(m.is_ready for m in machines) == len(machines)


def test_the_same_seed_fails_the_same_machines_and_another_seed_others():
    def failed(seed: int) -> set[str]:
        provider = SimulatedMachineProvider(faults=FaultInjection(0.3, seed=seed))
        machines = provider.allocate(requests(count=100), in_use_ips=(), now=0)
        return {m.hostname for m in settle(provider, machines, 50) if m.is_failed}

    assert failed(1) == failed(1)
    assert failed(1) != failed(2)


def test_a_failure_ratio_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match="failure_ratio"):
        FaultInjection(1.5)


def test_negative_timings_are_refused():
    with pytest.raises(ValueError, match="deploy_steps"):
        MachineTimings(deploy_steps=-1)
