"""``cnct.kaas.api.Cluster`` end to end: curl-shaped REST on the original routes, and gRPC."""

from __future__ import annotations

import base64
import re
from typing import Any

import grpc
import pytest
import yaml
from cryptography import x509
from google.protobuf import json_format, struct_pb2, wrappers_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status

import app
from app.services.kaas.planning import MAX_DEPLOY_RETRIES
from app.services.kaas.records import CLUSTER, CLUSTER_SPEC, MACHINE, OLD_RESERVATION, RESERVED
from app.services.plain_data import from_struct
from app.sim.machine_model import Machine, Phase, system_id_for
from app.sim.machines import FaultInjection
from app.store import EventType, ObjectStore
from gen.cnct.kaas.api import api_pb2, api_pb2_grpc
from tests.harness import Running, eventually, run, running
from tests.services.kaas.clusters import TIMEOUT, Rest, cluster_body, rest_api


async def _history(server: Running, since: int) -> tuple[list[str], list[dict[str, Machine]]]:
    """From the event log after ``since``: the cluster statuses recorded (repeats folded), and
    the machines as they stood after each machine event."""
    store = server.portico.store
    head = await store.current_revision()
    statuses: list[str] = []
    machines: dict[str, Machine] = {}
    snapshots: list[dict[str, Machine]] = []
    if head <= since:
        return statuses, snapshots
    async for event in store.watch(None, since):
        if event.kind == CLUSTER and event.type is not EventType.DELETED:
            state = api_pb2.ClusterStatus.Name(_detail(event.data).status)
            if not statuses or statuses[-1] != state:
                statuses.append(state)
        elif event.kind == MACHINE:
            if event.type is EventType.DELETED:
                machines.pop(event.key, None)
            else:
                machines[event.key] = _machine(event.data)
            snapshots.append(dict(machines))
        if event.revision >= head:
            break
    return statuses, snapshots


def _detail(data: bytes) -> api_pb2.ClusterDetailItem:
    return api_pb2.ClusterDetailItem.FromString(data)


def _machine(data: bytes) -> Machine:
    return Machine.from_dict(from_struct(Machine, struct_pb2.Struct.FromString(data)))


def _assert_kubeconfig(text: str, name: str, ips: set[str]) -> None:
    config = yaml.safe_load(text)
    [cluster] = config["clusters"]
    assert cluster["name"] == name
    server = cluster["cluster"]["server"]
    assert re.fullmatch(r"https://[\d.]+:6443", server)
    assert server.split("//")[1].split(":")[0] in ips
    ca = base64.b64decode(cluster["cluster"]["certificate-authority-data"])
    assert x509.load_pem_x509_certificate(ca).subject.rfc4514_string().startswith("OU=portico")
    [user] = config["users"]
    assert len(user["user"]["token"]) >= 32
    assert config["current-context"] == config["contexts"][0]["name"]


def test_a_cluster_lifecycle_over_rest(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            status, body = await api.call("POST", "/api/v1/cluster", json=cluster_body(workers=2))
            assert status == 200
            assert body == {
                "ok": True,
                "cluster": {
                    "name": "prod",
                    "status": "PROVISIONING",
                    "status_message": "0 of 3 machine(s) Ready",
                },
            }
            cluster = await api.wait_for("prod", "RUNNING")
            nodes = await api.nodes("prod")
            assert nodes["Name"] == "prod" and nodes["count"] == 3
            assert [m["maasHostname"] for m in nodes["machines"]] == [
                "prod-control-plane-0",
                "prod-workers-0",
                "prod-workers-1",
            ]
            for machine in nodes["machines"]:
                assert machine["k8sNodeStatus"] == "Ready"
                assert machine["maasNodeStatus"] == "Deployed"
                assert machine["k8sVersion"] == "1.31.2"
                assert re.fullmatch(r"[a-z0-9]{6}", machine["maasSystemId"])
            ips = {m["maasIPAddr"] for m in nodes["machines"]}
            assert len(ips) == 3
            _assert_kubeconfig(cluster["kubeconfig"], "prod", ips)

            # Add a pool, scale one, delete one: RECONCILING, then RUNNING with matching machines.
            store = server.portico.store
            since = await store.current_revision()
            status, body = await api.call(
                "POST",
                "/api/v1/cluster/pool",
                json={
                    "clusterName": "prod",
                    "worker_node_pools": [{"name": "gpu", "instanceType": "gpu", "count": 1}],
                },
            )
            assert (status, body) == (200, {"ok": True})
            await api.wait_for("prod", "RUNNING")
            assert (await _history(server, since))[0] == ["RECONCILING", "RUNNING"]
            assert (await api.nodes("prod"))["count"] == 4

            since = await store.current_revision()
            status, body = await api.call(
                "PUT",
                "/api/v1/cluster/pool",
                json={"clusterName": "prod", "node_pools": [{"name": "workers", "count": 3}]},
            )
            assert (status, body) == (200, {"ok": True})
            await api.wait_for("prod", "RUNNING")
            assert (await _history(server, since))[0] == ["RECONCILING", "RUNNING"]
            hosts = [m["maasHostname"] for m in (await api.nodes("prod"))["machines"]]
            assert hosts == [
                "prod-control-plane-0",
                "prod-workers-0",
                "prod-workers-1",
                "prod-workers-2",
                "prod-gpu-0",
            ]

            since = await store.current_revision()
            status, body = await api.call(
                "DELETE",
                "/api/v1/cluster/pool",
                params={"clusterName": "prod", "node_pool_names": ["gpu"]},
            )
            assert (status, body) == (200, {"ok": True})
            await api.wait_for("prod", "RUNNING")
            assert (await _history(server, since))[0] == ["RECONCILING", "RUNNING"]
            nodes = await api.nodes("prod")
            assert nodes["count"] == 4
            assert "prod-gpu-0" not in {m["maasHostname"] for m in nodes["machines"]}

            # The kubeconfig was issued once and survives reconciling.
            assert (await api.cluster("prod"))["kubeconfig"] == cluster["kubeconfig"]

            # Upgrade: one minor ahead at most, machines one by one, then RUNNING on the new one.
            status, body = await api.call("GET", "/api/v1/cluster/upgrade", params={"name": "prod"})
            assert (status, body) == (200, {"ok": True, "versions": ["1.32.0"]})
            since = await store.current_revision()
            status, body = await api.call(
                "PUT", "/api/v1/cluster/upgrade", json={"name": "prod", "version": "1.32.0"}
            )
            assert (status, body) == (200, {"ok": True})
            await api.wait_for("prod", "RUNNING")
            statuses, snapshots = await _history(server, since)
            assert statuses == ["RECONCILING", "RUNNING"]
            # One machine at a time, control plane first; every version change is recorded.
            upgraded: list[str] = []
            for machines in snapshots:
                assert sum(m.phase is Phase.UPGRADING for m in machines.values()) <= 1
                for m in machines.values():
                    if m.k8s_version == "1.32.0" and m.hostname not in upgraded:
                        upgraded.append(m.hostname)
            assert upgraded[0] == "prod-control-plane-0" and len(upgraded) == 4
            nodes = (await api.nodes("prod"))["machines"]
            assert {m["k8sVersion"] for m in nodes} == {"1.32.0"}
            assert {m["k8sNodeStatus"] for m in nodes} == {"Ready"}
            status, body = await api.call("GET", "/api/v1/cluster/upgrade", params={"name": "prod"})
            assert body == {"ok": False, "versions": []}

            # Delete: STOPPING (twice is fine), then gone.
            status, body = await api.call("DELETE", "/api/v1/cluster", params={"name": "prod"})
            assert (status, body) == (200, {"ok": True, "status": "STOPPING"})
            status, body = await api.call("DELETE", "/api/v1/cluster", params={"name": "prod"})
            assert status == 200 or body["code"] == 5  # still stopping, or already gone

            async def gone() -> tuple[int, dict] | None:
                reply = await api.call("GET", "/api/v1/cluster", params={"name": "prod"})
                if reply[0] != 200:
                    return reply
                assert reply[1]["cluster"]["status"] == "STOPPING"
                return None

            reply = await eventually(gone, TIMEOUT, what="cluster prod gone")
            assert reply == (404, {"code": 5, "message": "cluster 'prod' not found", "details": []})
            status, body = await api.call("GET", "/api/v1/cluster/list")
            assert body == {"ok": True, "clusters": []}

    run(scenario())


def test_a_cluster_lifecycle_over_grpc(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            meta = (("authorization", f"Bearer {token}"),)
            stub = api_pb2_grpc.ClusterStub(server.channel)
            request = json_format.ParseDict(
                cluster_body("edge", "1.30.6", 3), api_pb2.CreateClusterMsg()
            )
            reply = await stub.CreateCluster(request, metadata=meta)
            assert reply.ok and reply.cluster.status == api_pb2.PROVISIONING

            async def wait_for(state: int) -> api_pb2.ClusterDetailItem:
                async def reached() -> api_pb2.ClusterDetailItem | None:
                    got = await stub.GetCluster(api_pb2.GetClusterMsg(name="edge"), metadata=meta)
                    return got.cluster if got.cluster.status == state else None

                name = api_pb2.ClusterStatus.Name(state)
                return await eventually(reached, TIMEOUT, what=f"cluster edge {name}")

            cluster = await wait_for(api_pb2.RUNNING)
            nodes = await stub.GetClusterNodesStatus(
                api_pb2.GetClusterNodesStatusMsg(clusterName="edge"), metadata=meta
            )
            assert nodes.count == len(nodes.machines) == 5
            _assert_kubeconfig(cluster.kubeconfig, "edge", {m.maasIPAddr for m in nodes.machines})

            await stub.AddNodePool(
                api_pb2.AddNodePoolMsg(
                    clusterName="edge",
                    worker_node_pools=[
                        api_pb2.MachineSpec(name="extra", instanceType="gpu", count=2)
                    ],
                ),
                metadata=meta,
            )
            await wait_for(api_pb2.RUNNING)
            await stub.ScaleNodePool(
                api_pb2.ScaleNodePoolMsg(
                    clusterName="edge",
                    node_pools=[api_pb2.ScaleNodePoolSpec(name="extra", count=1)],
                ),
                metadata=meta,
            )
            await wait_for(api_pb2.RUNNING)
            await stub.DeleteNodePool(
                api_pb2.DeleteNodePoolMsg(clusterName="edge", node_pool_names=["workers"]),
                metadata=meta,
            )
            await wait_for(api_pb2.RUNNING)
            nodes = await stub.GetClusterNodesStatus(
                api_pb2.GetClusterNodesStatusMsg(clusterName="edge"), metadata=meta
            )
            assert [m.maasHostname for m in nodes.machines] == [
                "edge-control-plane-0",
                "edge-control-plane-1",
                "edge-control-plane-2",
                "edge-extra-0",
            ]

            info = await stub.GetUpgradeClusterInformation(
                api_pb2.GetUpgradeClusterInformationMsg(name="edge"), metadata=meta
            )
            assert info.ok and list(info.versions) == ["1.31.2"]
            await stub.UpgradeCluster(
                api_pb2.UpgradeClusterMsg(name="edge", version="1.31.2"), metadata=meta
            )
            await wait_for(api_pb2.RUNNING)
            nodes = await stub.GetClusterNodesStatus(
                api_pb2.GetClusterNodesStatusMsg(clusterName="edge"), metadata=meta
            )
            assert {m.k8sVersion for m in nodes.machines} == {"1.31.2"}

            deleted = await stub.DeleteCluster(api_pb2.DeleteClusterMsg(name="edge"), metadata=meta)
            assert deleted.ok and deleted.status == "STOPPING"

            async def gone() -> bool:
                try:
                    await stub.GetCluster(api_pb2.GetClusterMsg(name="edge"), metadata=meta)
                except grpc.aio.AioRpcError as error:
                    assert error.code() is grpc.StatusCode.NOT_FOUND
                    return True
                return False

            await eventually(gone, TIMEOUT, what="cluster edge gone")

    run(scenario())


def test_the_list_is_ordered_by_name_and_has_no_kubeconfigs(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            for name in ("zeta", "alpha", "mid-1", "mid-0"):
                status, _ = await api.call("POST", "/api/v1/cluster", json=cluster_body(name))
                assert status == 200
            status, body = await api.call("GET", "/api/v1/cluster/list")
            assert status == 200 and body["ok"] is True
            assert [c["name"] for c in body["clusters"]] == ["alpha", "mid-0", "mid-1", "zeta"]
            assert all(set(c) == {"name", "status", "status_message"} for c in body["clusters"])
            await api.wait_for("zeta", "RUNNING")
            assert (await api.cluster("zeta"))["kubeconfig"]

    run(scenario())


def test_a_cluster_is_restarted_mid_provisioning_and_still_becomes_running(tmp_path):
    async def scenario() -> None:
        # Slow enough that the first server stops well before provisioning ends (6+ steps).
        async with running(tmp_path, sim_step_seconds=0.1) as server:
            api = await rest_api(server)
            status, _ = await api.call("POST", "/api/v1/cluster", json=cluster_body("resume"))
            assert status == 200

            async def three_machines() -> bool:
                return (await api.nodes("resume"))["count"] >= 3

            await eventually(three_machines, TIMEOUT)
            cluster = await api.cluster("resume")
            assert cluster["status"] == "PROVISIONING" and cluster["kubeconfig"] == ""
            before = {
                m["maasSystemId"]: m["maasIPAddr"] for m in (await api.nodes("resume"))["machines"]
            }
        async with ObjectStore.open(f"sqlite:///{tmp_path / 'portico.db'}") as store:
            record = await store.get(CLUSTER, "resume")
            assert _detail(record.data).status == api_pb2.PROVISIONING  # stopped mid-provisioning
        async with running(tmp_path, sim_step_seconds=0.1) as server:
            api = await rest_api(server)
            cluster = await api.wait_for("resume", "RUNNING")
            assert yaml.safe_load(cluster["kubeconfig"])["clusters"][0]["name"] == "resume"
            after = {
                m["maasSystemId"]: m["maasIPAddr"] for m in (await api.nodes("resume"))["machines"]
            }
            assert after == before  # the same machines carried on, none allocated twice

    run(scenario())


def test_failed_machines_are_retried_then_repaired_by_scaling_their_pool(tmp_path):
    faults = FaultInjection(failure_ratio=0.4, seed=1)
    retries = MAX_DEPLOY_RETRIES

    def fails(name: str, pool: str, index: int, attempts: range = range(1)) -> bool:
        return all(faults.fails(system_id_for(name, pool, index), a) for a in attempts)

    # Names whose machines fail exactly as wanted (the fault injection is a pure function):
    # workers-0 fails its first deployment and every automatic retry, the repair succeeds.
    every = range(retries + 1)
    names = [f"lab-{i}" for i in range(5000)]
    degraded = next(
        n
        for n in names
        if not fails(n, "control-plane", 0)
        and fails(n, "workers", 0, every)
        and not fails(n, "workers", 0, range(retries + 1, retries + 2))
        and not fails(n, "workers", 1)
    )
    broken = next(n for n in names if fails(n, "control-plane", 0, every))

    async def scenario() -> None:
        async with running(tmp_path, sim_failure_ratio=0.4, sim_seed=1) as server:
            api = await rest_api(server)
            stub = api_pb2_grpc.ClusterStub(server.channel)
            md = (("authorization", api.headers["authorization"]),)
            since = await server.portico.store.current_revision()
            for name in (degraded, broken):
                assert (await api.call("POST", "/api/v1/cluster", json=cluster_body(name)))[
                    0
                ] == 200
            gave_up = f"gave up after {retries} retries"

            async def settled(name: str, state: str) -> dict:
                async def check() -> dict | None:
                    cluster = await api.cluster(name)
                    ok = cluster["status"] == state and gave_up in cluster["status_message"]
                    return cluster if ok else None

                return await eventually(check, timeout=TIMEOUT)

            cluster = await settled(degraded, "DEGRADED")
            assert cluster["status_message"].startswith("1 of 3 machine(s) failed: ")
            assert f"{degraded}-workers-0" in cluster["status_message"]
            # The control plane is up: the kubeconfig is served although a worker failed.
            planes = {
                m["maasIPAddr"]
                for m in (await api.nodes(degraded))["machines"]
                if "control-plane" in m["maasHostname"]
            }
            _assert_kubeconfig(cluster["kubeconfig"], degraded, planes)
            # The retries showed in the status message on their way.
            messages = await _messages(server, since, degraded)
            assert any(f"retry 1 of {retries}" in m for m in messages), messages
            assert any(f"redeploying {degraded}-workers-0 (retry 2 of" in m for m in messages)

            cluster = await settled(broken, "ERROR")
            assert f"{broken}-control-plane-0" in cluster["status_message"]
            assert cluster["kubeconfig"] == ""
            # An upgrade is refused on ERROR, and the information says so too.
            info = await stub.GetUpgradeClusterInformation(
                api_pb2.GetUpgradeClusterInformationMsg(name=broken), metadata=md
            )
            assert not info.ok and list(info.versions) == []
            status, body = await api.call(
                "PUT", "/api/v1/cluster/upgrade", json={"name": broken, "version": "1.32.0"}
            )
            assert status == 400 and body["code"] == 9 and "ERROR" in body["message"]

            # The user's repair: scaling the pool (even to its count) deploys it again.
            await stub.ScaleNodePool(
                api_pb2.ScaleNodePoolMsg(
                    clusterName=degraded,
                    node_pools=[api_pb2.ScaleNodePoolSpec(name="workers", count=2)],
                ),
                metadata=md,
            )
            cluster = await api.wait_for(degraded, "RUNNING")
            nodes = await api.nodes(degraded)
            assert {m["maasNodeStatus"] for m in nodes["machines"]} == {"Deployed"}
            assert (await api.call("DELETE", "/api/v1/cluster", params={"name": broken}))[0] == 200

    run(scenario())


async def _messages(server: Running, since: int, name: str) -> list[str]:
    """Every status message the cluster had, from the event log."""
    store = server.portico.store
    head = await store.current_revision()
    found: list[str] = []
    async for event in store.watch(CLUSTER, since):
        if event.key == name and event.type is not EventType.DELETED:
            found.append(_detail(event.data).status_message)
        if event.revision >= head:
            break
    return found


def test_version_information_describes_the_running_build(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            status, body = await api.call("GET", "/api/v1/version")
            assert status == 200 and body["ok"] is True
            info = body["version_information"]
            assert info["git_version"] == app.__version__
            assert info["compiler"] == "CPython"
            assert re.fullmatch(r"python3\.\d+\.\d+.*", info["go_version"])
            assert re.fullmatch(r"[a-z0-9]+/[a-z0-9_]+", info["platform"])
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", info["build_date"])
            assert re.fullmatch(r"([0-9a-f]{40})?", info["git_commit"])
            assert info["git_tree_state"] in ("", "clean", "dirty")

    run(scenario())


# --- every error path, with its exact status code, on both transports ------------------------


async def _grpc_error(server: Running, token: str, method: str, request: Any) -> tuple[str, Any]:
    stub = api_pb2_grpc.ClusterStub(server.channel)
    try:
        await getattr(stub, method)(request, metadata=(("authorization", f"Bearer {token}"),))
    except grpc.aio.AioRpcError as error:
        status = rpc_status.from_call(error)
        fields = []
        for detail in status.details if status else ():
            bad = error_details_pb2.BadRequest()
            if detail.Unpack(bad):
                fields = [v.field for v in bad.field_violations]
        return error.code().name, (error.details(), fields)
    return "OK", ("", [])


async def _rest_error(api: Rest, method: str, request: Any) -> tuple[str, Any]:
    body = json_format.MessageToDict(request, preserving_proto_field_name=True)
    status, reply = await api.call("POST", f"/cnct.kaas.api.Cluster/{method}", json=body)
    if status == 200:
        return "OK", ("", [])
    fields = [v["field"] for d in reply["details"] for v in d.get("field_violations", [])]
    code = next(c.name for c in grpc.StatusCode if c.value[0] == reply["code"])
    return code, (reply["message"], fields)


def _create(name: str, **changes: Any) -> api_pb2.CreateClusterMsg:
    body = cluster_body(name)
    body.update(changes)
    return json_format.ParseDict(body, api_pb2.CreateClusterMsg())


# (method, request, expected code, words in the message, fields named); "ok", "busy" and "gone"
# are clusters the scenario prepares: RUNNING, PROVISIONING and STOPPING on a slow clock.
ERROR_CASES = [
    ("CreateCluster", _create("Bad_Name"), "INVALID_ARGUMENT", "name", ["name"]),
    (
        "CreateCluster",
        _create("x", k8s_version="1.12.0", control_plane_nodes={"count": 2, "instanceType": "xl"}),
        "INVALID_ARGUMENT",
        "supported versions",
        # The field rules first (in field order), then the supported versions.
        ["control_plane_nodes.instanceType", "control_plane_nodes.count", "k8s_version"],
    ),
    (
        "CreateCluster",
        _create(
            "x",
            worker_node_pools=[
                {"name": "a", "instanceType": "standard", "count": 0},
                {"name": "a", "instanceType": "gpu", "count": 1, "labels": [{"name": "bad key!"}]},
                {"name": "control-plane", "instanceType": "gpu", "count": 1},
            ],
        ),
        "INVALID_ARGUMENT",
        "count",
        [  # the field rules' violations, then the names given twice
            "worker_node_pools[0].count",
            "worker_node_pools[1].labels[0].name",
            "worker_node_pools[2].name",
            "worker_node_pools[1].name",
        ],
    ),
    (
        "CreateCluster",
        _create("x", worker_node_pools=[]),
        "INVALID_ARGUMENT",
        "",
        ["worker_node_pools"],
    ),
    ("CreateCluster", _create("ok"), "ALREADY_EXISTS", "already exists", []),
    ("GetCluster", api_pb2.GetClusterMsg(name="nope"), "NOT_FOUND", "'nope' not found", []),
    ("GetCluster", api_pb2.GetClusterMsg(), "INVALID_ARGUMENT", "required", ["name"]),
    ("DeleteCluster", api_pb2.DeleteClusterMsg(name="nope"), "NOT_FOUND", "not found", []),
    (
        "GetClusterNodesStatus",
        api_pb2.GetClusterNodesStatusMsg(clusterName="nope"),
        "NOT_FOUND",
        "not found",
        [],
    ),
    (
        "GetClusterNodesStatus",
        api_pb2.GetClusterNodesStatusMsg(clusterName="UP"),
        "INVALID_ARGUMENT",
        "lower case",
        ["clusterName"],
    ),
    (
        "GetUpgradeClusterInformation",
        api_pb2.GetUpgradeClusterInformationMsg(name="nope"),
        "NOT_FOUND",
        "not found",
        [],
    ),
    (
        "AddNodePool",
        api_pb2.AddNodePoolMsg(
            clusterName="nope",
            worker_node_pools=[api_pb2.MachineSpec(name="p", instanceType="gpu", count=1)],
        ),
        "NOT_FOUND",
        "not found",
        [],
    ),
    (
        "AddNodePool",
        api_pb2.AddNodePoolMsg(clusterName="ok"),
        "INVALID_ARGUMENT",
        "at least one",
        ["worker_node_pools"],
    ),
    (
        "AddNodePool",
        api_pb2.AddNodePoolMsg(
            clusterName="ok",
            worker_node_pools=[api_pb2.MachineSpec(name="workers", instanceType="gpu", count=1)],
        ),
        "ALREADY_EXISTS",
        "workers",
        [],
    ),
    (
        "AddNodePool",
        api_pb2.AddNodePoolMsg(
            clusterName="gone",
            worker_node_pools=[api_pb2.MachineSpec(name="p", instanceType="gpu", count=1)],
        ),
        "FAILED_PRECONDITION",
        "STOPPING",
        [],
    ),
    (
        "DeleteNodePool",
        api_pb2.DeleteNodePoolMsg(clusterName="ok", node_pool_names=["ghost"]),
        "NOT_FOUND",
        "ghost",
        [],
    ),
    (
        "DeleteNodePool",
        api_pb2.DeleteNodePoolMsg(clusterName="ok", node_pool_names=["workers"]),
        "FAILED_PRECONDITION",
        "every worker pool",
        [],
    ),
    (
        "DeleteNodePool",
        api_pb2.DeleteNodePoolMsg(clusterName="gone", node_pool_names=["workers"]),
        "FAILED_PRECONDITION",
        "STOPPING",
        [],
    ),
    (
        "DeleteNodePool",
        api_pb2.DeleteNodePoolMsg(clusterName="ok"),
        "INVALID_ARGUMENT",
        "",
        ["node_pool_names"],
    ),
    (
        "ScaleNodePool",
        api_pb2.ScaleNodePoolMsg(
            clusterName="ok", node_pools=[api_pb2.ScaleNodePoolSpec(name="ghost", count=2)]
        ),
        "NOT_FOUND",
        "ghost",
        [],
    ),
    (
        "ScaleNodePool",
        api_pb2.ScaleNodePoolMsg(
            clusterName="ok", node_pools=[api_pb2.ScaleNodePoolSpec(name="workers", count=0)]
        ),
        "INVALID_ARGUMENT",
        "between 1 and",
        ["node_pools[0].count"],
    ),
    (
        "ScaleNodePool",
        api_pb2.ScaleNodePoolMsg(
            clusterName="gone", node_pools=[api_pb2.ScaleNodePoolSpec(name="workers", count=2)]
        ),
        "FAILED_PRECONDITION",
        "STOPPING",
        [],
    ),
    (
        "UpgradeCluster",
        api_pb2.UpgradeClusterMsg(name="ok", version="1.32.0"),
        "INVALID_ARGUMENT",
        "1.31.2",
        ["version"],
    ),
    (
        "UpgradeCluster",
        api_pb2.UpgradeClusterMsg(name="ok", version="1.29.10"),
        "INVALID_ARGUMENT",
        "cannot upgrade",
        ["version"],
    ),
    (
        "UpgradeCluster",
        api_pb2.UpgradeClusterMsg(name="busy", version="1.31.2"),
        "FAILED_PRECONDITION",
        "PROVISIONING",
        [],
    ),
    (
        "UpgradeCluster",
        api_pb2.UpgradeClusterMsg(name="nope", version="1.31.2"),
        "NOT_FOUND",
        "not found",
        [],
    ),
    ("UpgradeCluster", api_pb2.UpgradeClusterMsg(name="ok"), "INVALID_ARGUMENT", "", ["version"]),
]


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_every_error_path_answers_its_status_code(tmp_path, transport):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            ok = _create("ok", k8s_version="1.30.6")
            assert (await api.call("POST", "/api/v1/cluster", json=_json(ok)))[0] == 200
            await api.wait_for("ok", "RUNNING")
        # A second server on a slow clock keeps "busy" PROVISIONING while the cases run.
        async with running(tmp_path, sim_step_seconds=3600.0) as server:
            api = await rest_api(server)
            token = api.headers["authorization"].split()[1]
            for name in ("busy", "gone"):
                created = _json(_create(name, k8s_version="1.30.6"))
                assert (await api.call("POST", "/api/v1/cluster", json=created))[0] == 200
            assert (await api.call("DELETE", "/api/v1/cluster", params={"name": "gone"}))[0] == 200
            for method, request, code, words, fields in ERROR_CASES:
                if transport == "rest":
                    got, (message, named) = await _rest_error(api, method, request)
                else:
                    got, (message, named) = await _grpc_error(server, token, method, request)
                assert got == code, (method, request, message)
                assert words in message, (method, message)
                assert named == fields, (method, message)
            # Nothing was written by any refused request.
            _, body = await api.call("GET", "/api/v1/cluster/list")
            assert [c["name"] for c in body["clusters"]] == ["busy", "gone", "ok"]
            nodes = await api.nodes("ok")
            assert [m["maasHostname"] for m in nodes["machines"]] == [
                "ok-control-plane-0",
                "ok-workers-0",
                "ok-workers-1",
            ]
            assert (await api.cluster("busy"))["status"] == "PROVISIONING"

    run(scenario())


def _json(message: Any) -> dict:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def test_stopping_clusters_refuse_changes_and_a_second_delete_is_fine(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_step_seconds=3600.0) as server:
            api = await rest_api(server)
            assert (await api.call("POST", "/api/v1/cluster", json=cluster_body("bye")))[0] == 200
            for _ in range(2):
                status, body = await api.call("DELETE", "/api/v1/cluster", params={"name": "bye"})
                assert (status, body) == (200, {"ok": True, "status": "STOPPING"})
            status, body = await api.call(
                "POST",
                "/api/v1/cluster/pool",
                json={
                    "clusterName": "bye",
                    "worker_node_pools": [{"name": "x", "instanceType": "gpu", "count": 1}],
                },
            )
            assert status == 400 and body["code"] == 9 and "STOPPING" in body["message"]
            # The name is still taken while the cluster stops.
            status, body = await api.call("POST", "/api/v1/cluster", json=cluster_body("bye"))
            assert status == 409 and body["code"] == 6

    run(scenario())


def test_machine_addresses_running_out_is_resource_exhausted(tmp_path):
    async def scenario() -> None:
        # A /29 holds 5 machine addresses (the first host is the gateway).
        async with running(tmp_path, machine_ip_pool="10.9.0.0/29") as server:
            api = await rest_api(server)
            assert (await api.call("POST", "/api/v1/cluster", json=cluster_body("a", workers=3)))[
                0
            ] == 200
            status, body = await api.call(
                "POST", "/api/v1/cluster", json=cluster_body("b", workers=1)
            )
            assert status == 429 and body["code"] == 8
            assert "1 free address(es) of 5" in body["message"]
            await api.wait_for("a", "RUNNING")
            status, body = await api.call(
                "PUT",
                "/api/v1/cluster/pool",
                json={"clusterName": "a", "node_pools": [{"name": "workers", "count": 5}]},
            )
            assert status == 429 and body["code"] == 8
            status, body = await api.call(
                "PUT",
                "/api/v1/cluster/pool",
                json={"clusterName": "a", "node_pools": [{"name": "workers", "count": 4}]},
            )
            assert status == 200
            await api.wait_for("a", "RUNNING")
            assert (await api.nodes("a"))["count"] == 5

    run(scenario())


def test_a_create_writes_its_cluster_and_spec_and_no_bookkeeping_event(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            before = await server.portico.store.current_revision()
            assert (await api.call("POST", "/api/v1/cluster", json=cluster_body("a")))[0] == 200
            kinds = [CLUSTER, CLUSTER_SPEC, MACHINE, OLD_RESERVATION[0]]
            events, _ = await server.portico.store.changes(kinds, before)
            # A transaction's events share their moment; the reconciler's come later.
            created = [(e.kind, e.key) for e in events if e.at == events[0].at]
            # Nothing else is written with them (the reservation is a counter, not an object).
            assert created == [(CLUSTER, "a"), (CLUSTER_SPEC, "a")]

    run(scenario())


def test_a_reservation_an_older_version_kept_as_an_object_is_counted_again(tmp_path):
    """A database of a version that kept the reservation as an object, whose value is stale:
    the next change counts it from the stored specs and drops the object, and the address
    pool's room is still what is refused."""

    async def scenario() -> None:
        # A /29 holds 5 machine addresses (the first host is the gateway).
        async with running(tmp_path, machine_ip_pool="10.9.0.0/29") as server:
            api = await rest_api(server)
            assert (await api.call("POST", "/api/v1/cluster", json=cluster_body("a", workers=2)))[
                0
            ] == 200
            store = server.portico.store

            def as_an_older_version(conn: Any) -> None:
                conn.exec_driver_sql(f"DELETE FROM store_meta WHERE name = '{RESERVED}'")

            await store.database.write(as_an_older_version)
            await store.create(*OLD_RESERVATION, wrappers_pb2.Int64Value(value=0))

            status, body = await api.call(
                "POST", "/api/v1/cluster", json=cluster_body("b", workers=2)
            )
            assert status == 429 and "2 free address(es) of 5" in body["message"]
            assert (await api.call("POST", "/api/v1/cluster", json=cluster_body("c", workers=1)))[
                0
            ] == 200
            assert await store.get(*OLD_RESERVATION) is None
            status, body = await api.call(
                "POST", "/api/v1/cluster", json=cluster_body("d", workers=1)
            )
            assert status == 429 and "0 free address(es) of 5" in body["message"]

    run(scenario())


def test_the_newest_version_has_no_upgrade_and_scaling_to_the_same_size_changes_nothing(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            assert (await api.call("POST", "/api/v1/cluster", json=cluster_body("top", "1.32.0")))[
                0
            ] == 200
            await api.wait_for("top", "RUNNING")
            status, body = await api.call("GET", "/api/v1/cluster/upgrade", params={"name": "top"})
            assert (status, body) == (200, {"ok": False, "versions": []})
            status, body = await api.call(
                "PUT", "/api/v1/cluster/upgrade", json={"name": "top", "version": "1.32.0"}
            )
            assert status == 400 and "none (it runs the newest)" in body["message"]
            status, _ = await api.call(
                "PUT",
                "/api/v1/cluster/pool",
                json={"clusterName": "top", "node_pools": [{"name": "workers", "count": 2}]},
            )
            assert status == 200
            assert (await api.cluster("top"))["status"] == "RUNNING"

    run(scenario())
