"""Changes while a cluster is busy, as automation makes them, on both transports: queued in the
desired state unless they truly conflict; upgrade information that matches what an upgrade
would do; Kubernetes versions written with a ``v``; DEGRADED and ERROR clusters repaired by their
user."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from app.services.kaas.planning import MAX_DEPLOY_RETRIES
from app.services.kaas.records import load_cluster
from app.sim.machine_model import system_id_for
from app.sim.machines import FaultInjection
from gen.cnct.kaas.api import api_pb2, api_pb2_grpc
from tests.harness import Running, run, running
from tests.services.kaas.clusters import cluster_body
from tests.services.kudo.world import eventually

Reply = tuple[str, str, dict[str, Any]]


class Calls:
    """Cluster RPCs over one transport: (code name, error message, reply as JSON)."""

    def __init__(self, server: Running, token: str, transport: str) -> None:
        self.server = server
        self.token = token
        self.transport = transport

    async def __call__(self, method: str, request: Any) -> Reply:
        if self.transport == "rest":
            body = json_format.MessageToDict(request, preserving_proto_field_name=True)
            reply = await self.server.http.post(
                f"/cnct.kaas.api.Cluster/{method}",
                json=body,
                headers={"authorization": f"Bearer {self.token}"},
            )
            data = reply.json()
            if reply.status_code == 200:
                return "OK", "", data
            code = next(c.name for c in grpc.StatusCode if c.value[0] == data["code"])
            return code, data["message"], {}
        stub = api_pb2_grpc.ClusterStub(self.server.channel)
        try:
            answer = await getattr(stub, method)(
                request, metadata=(("authorization", f"Bearer {self.token}"),)
            )
        except grpc.aio.AioRpcError as error:
            return error.code().name, error.details() or "", {}
        data = json_format.MessageToDict(
            answer, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        return "OK", "", data

    async def status(self, name: str) -> str:
        code, message, reply = await self("GetCluster", api_pb2.GetClusterMsg(name=name))
        assert code == "OK", message
        return reply["cluster"].get("status", "STATUS_UNSPECIFIED")

    async def wait_for(self, name: str, state: str) -> None:
        async def reached() -> bool:
            return await self.status(name) == state

        await eventually(reached, timeout=20)

    async def cluster(self, name: str) -> dict[str, Any]:
        code, message, reply = await self("GetCluster", api_pb2.GetClusterMsg(name=name))
        assert code == "OK", message
        return reply["cluster"]

    async def machines(self, name: str) -> list[dict[str, Any]]:
        request = api_pb2.GetClusterNodesStatusMsg(clusterName=name)
        code, message, reply = await self("GetClusterNodesStatus", request)
        assert code == "OK", message
        return reply.get("machines", [])

    async def ok(self, method: str, request: Any) -> None:
        code, message, _ = await self(method, request)
        assert code == "OK", f"{method}: {code} {message}"

    async def upgrade_info(self, name: str) -> tuple[bool, list[str]]:
        request = api_pb2.GetUpgradeClusterInformationMsg(name=name)
        code, message, reply = await self("GetUpgradeClusterInformation", request)
        assert code == "OK", message
        return reply.get("ok", False), reply.get("versions", [])


def _scale(name: str, count: int, pool: str = "workers") -> api_pb2.ScaleNodePoolMsg:
    return api_pb2.ScaleNodePoolMsg(
        clusterName=name, node_pools=[api_pb2.ScaleNodePoolSpec(name=pool, count=count)]
    )


def _upgrade(name: str, version: str) -> api_pb2.UpgradeClusterMsg:
    return api_pb2.UpgradeClusterMsg(name=name, version=version)


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_changes_queue_while_busy_and_only_conflicts_are_refused(tmp_path, transport):
    async def scenario() -> None:
        # Slow enough steps that each phase can be watched.
        async with running(tmp_path, sim_step_seconds=0.05) as server:
            call = Calls(server, await server.login(), transport)
            create = json_format.ParseDict(
                cluster_body("auto", "v1.31.2"), api_pb2.CreateClusterMsg()
            )
            code, message, _ = await call("CreateCluster", create)
            assert code == "OK", message
            stored = await load_cluster(server.portico.store, "auto")
            assert stored is not None and stored.spec.k8s_version == "1.31.2"
            bad = json_format.ParseDict(
                cluster_body("other", "v1.12.0"), api_pb2.CreateClusterMsg()
            )
            code, message, _ = await call("CreateCluster", bad)
            assert code == "INVALID_ARGUMENT"
            assert "1.29.10, 1.30.6, 1.31.2, 1.32.0" in message and "'v1.12.0'" in message

            # PROVISIONING: no version runs yet, so no upgrade, and the information agrees.
            assert await call.status("auto") == "PROVISIONING"
            assert await call.upgrade_info("auto") == (False, [])
            code, message, _ = await call("UpgradeCluster", _upgrade("auto", "1.32.0"))
            assert code == "FAILED_PRECONDITION" and "PROVISIONING" in message
            # A pool change is queued in the desired state meanwhile.
            code, message, _ = await call("ScaleNodePool", _scale("auto", 3))
            assert code == "OK", message
            assert await call.status("auto") == "PROVISIONING"

            await call.wait_for("auto", "RUNNING")
            assert await call.upgrade_info("auto") == (True, ["1.32.0"])
            code, message, _ = await call("UpgradeCluster", _upgrade("auto", "v1.32.0"))
            assert code == "OK", message
            assert await call.status("auto") == "RECONCILING"
            # Upgrading: another upgrade conflicts, and the information says no; a scale does not.
            assert await call.upgrade_info("auto") == (False, [])
            code, message, _ = await call("UpgradeCluster", _upgrade("auto", "1.32.0"))
            assert code == "FAILED_PRECONDITION" and "still upgrading" in message
            code, message, _ = await call("ScaleNodePool", _scale("auto", 1))
            assert code == "OK", message

            # The reconciler converges to the latest desired state: new version, one worker.
            await call.wait_for("auto", "RUNNING")
            state = await load_cluster(server.portico.store, "auto")
            assert state is not None
            assert sorted(m.hostname for m in state.machines) == [
                "auto-control-plane-0",
                "auto-workers-0",
            ]
            assert {m.k8s_version for m in state.machines} == {"1.32.0"}
            assert await call.upgrade_info("auto") == (False, [])  # it runs the newest

    run(scenario())


def _create() -> api_pb2.CreateClusterMsg:
    return api_pb2.CreateClusterMsg()


def _pool(name: str, count: int) -> api_pb2.MachineSpec:
    return api_pb2.MachineSpec(name=name, instanceType="standard", count=count)


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_failed_clusters_are_repaired_by_scaling_or_adding_their_pool_again(tmp_path, transport):
    faults = FaultInjection(failure_ratio=0.4, seed=1)
    retries = MAX_DEPLOY_RETRIES

    def fails(name: str, pool: str, index: int, attempts: range = range(1)) -> bool:
        return all(faults.fails(system_id_for(name, pool, index), a) for a in attempts)

    # Clusters whose workers-0 fails its first deployment and every automatic retry, and whose
    # next deployment (the repair's) succeeds, as do the other machines' first two.
    def lone_worker_fails(name: str) -> bool:
        return (
            not fails(name, "control-plane", 0)
            and fails(name, "workers", 0, range(retries + 1))
            and not fails(name, "workers", 0, range(retries + 1, retries + 2))
        )

    def as_wanted(name: str) -> bool:
        return (
            lone_worker_fails(name)
            and not any(fails(name, "workers", 1, range(a, a + 1)) for a in (0, 1))
            and not fails(name, "spare", 0)
        )

    scaled, added = [n for n in (f"lab-{i}" for i in range(5000)) if as_wanted(n)][:2]
    # With its only worker failed, a cluster is ERROR: no pod can run.
    lone = next(n for n in (f"solo-{i}" for i in range(5000)) if lone_worker_fails(n))

    # With its control plane failed, a cluster is ERROR: etcd lost its quorum.
    def control_plane_fails(name: str) -> bool:
        return (
            fails(name, "control-plane", 0, range(retries + 1))
            and not fails(name, "control-plane", 0, range(retries + 1, retries + 2))
            and not any(fails(name, "workers", i) for i in (0, 1))
        )

    headless = next(n for n in (f"cp-{i}" for i in range(5000)) if control_plane_fails(n))
    bodies = {name: cluster_body(name) for name in (scaled, added, headless)}
    bodies[lone] = cluster_body(lone, workers=1)

    async def scenario() -> None:
        async with running(tmp_path, sim_failure_ratio=0.4, sim_seed=1) as server:
            call = Calls(server, await server.login(), transport)
            for body in bodies.values():
                await call.ok("CreateCluster", json_format.ParseDict(body, _create()))

            failed = [
                (scaled, "DEGRADED"),
                (added, "DEGRADED"),
                (lone, "ERROR"),
                (headless, "ERROR"),
            ]
            for name, state in failed:

                async def gave_up(name: str = name, state: str = state) -> bool:
                    cluster = await call.cluster(name)
                    return cluster.get("status") == state and (
                        f"gave up after {retries} retries" in cluster["status_message"]
                    )

                await eventually(gave_up, timeout=20)
                # A kubeconfig exactly when the control plane is up.
                kubeconfig = (await call.cluster(name))["kubeconfig"]
                assert ("server: https://" in kubeconfig) is (name != headless)
            # A DEGRADED cluster may upgrade, an ERROR one not; the information says the same.
            assert await call.upgrade_info(scaled) == (True, ["1.32.0"])
            assert await call.upgrade_info(lone) == (False, [])
            code, message, _ = await call("UpgradeCluster", _upgrade(lone, "1.32.0"))
            assert code == "FAILED_PRECONDITION" and "ERROR" in message

            # Repaired by scaling the pool to its own size, while upgrading: both converge.
            await call.ok("UpgradeCluster", _upgrade(scaled, "1.32.0"))
            await call.ok("ScaleNodePool", _scale(scaled, 2))
            await call.ok("ScaleNodePool", _scale(lone, 1))
            # The control plane is repaired the same way, at its own size (which cannot change).
            code, message, _ = await call("ScaleNodePool", _scale(headless, 3, "control-plane"))
            assert code == "FAILED_PRECONDITION" and "keeps its 1 machine(s)" in message
            await call.ok("ScaleNodePool", _scale(headless, 1, "control-plane"))
            # Repaired by deleting the pool and adding it again (another pool holds the
            # workloads meanwhile): the released slots deploy new machines, which work.
            pools = api_pb2.AddNodePoolMsg(clusterName=added, worker_node_pools=[_pool("spare", 1)])
            await call.ok("AddNodePool", pools)
            doomed = api_pb2.DeleteNodePoolMsg(clusterName=added, node_pool_names=["workers"])
            await call.ok("DeleteNodePool", doomed)

            async def released() -> bool:
                return not any("-workers-" in m["maasHostname"] for m in await call.machines(added))

            await eventually(released, timeout=20)
            again = api_pb2.AddNodePoolMsg(
                clusterName=added, worker_node_pools=[_pool("workers", 2)]
            )
            await call.ok("AddNodePool", again)

            repaired = [(scaled, "1.32.0", 3), (added, "1.31.2", 4), (lone, "1.31.2", 2)]
            repaired.append((headless, "1.31.2", 3))
            for name, version, count in repaired:
                await call.wait_for(name, "RUNNING")
                machines = await call.machines(name)
                assert len(machines) == count
                assert {(m["maasNodeStatus"], m["k8sVersion"]) for m in machines} == {
                    ("Deployed", version)
                }

    run(scenario())
