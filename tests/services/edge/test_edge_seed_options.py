"""Seed options that act: AUTO_DELETE, auto-clusters with their ip_access, cloudlet_loc."""

from __future__ import annotations

from gen.edgeproto import app_inst_pb2, app_inst_pb2_grpc, common_pb2
from tests.harness import run, running
from tests.services.edge.world import (
    APP,
    APP_INST,
    CLOUDLET,
    CLUSTER_INST,
    Rest,
    bearer,
    build_world,
    rest_api,
)
from tests.services.kudo.world import eventually

AUTO = {**CLUSTER_INST, "cluster_key": {"name": "autocluster-pokemon"}}


def test_deleting_an_auto_delete_app_deletes_its_app_insts_first(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await build_world(api)
            await api.progress("/create/clusterinst", {"key": CLUSTER_INST})
            await api.progress("/create/appinst", {"key": APP_INST})
            # Without AUTO_DELETE the AppInst keeps the App.
            status, error = await api.post("/delete/app", {"key": APP})
            assert (status, error["code"]) == (400, 9) and "AppInst" in error["message"]
            await api.ok(
                "/update/app", {"key": APP, "del_opt": "AUTO_DELETE", "fields": ["del_opt"]}
            )
            assert await api.ok("/delete/app", {"key": APP}) == {"message": "Deleted", "code": 0}
            assert await api.show("appinst") == []
            assert await api.show("app") == []
            [refs] = [r["result"] for r in await api.ok("/v1/edge/clusterrefs:show", {})]
            assert refs.get("apps", []) == []

    run(scenario())


def test_an_app_inst_on_an_auto_cluster_creates_and_later_removes_it(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await build_world(api)
            await api.progress(
                "/update/cloudlet",
                {"key": CLOUDLET, "num_dynamic_ips": 2, "fields": ["num_dynamic_ips"]},
            )
            token = api.token
            stub = app_inst_pb2_grpc.AppInstApiStub(server.channel)
            inst = app_inst_pb2.AppInst(auto_cluster_ip_access=common_pb2.IP_ACCESS_DEDICATED)
            inst.key.app_key.developer_key.name = APP["developer_key"]["name"]
            inst.key.app_key.name = APP["name"]
            inst.key.app_key.version = APP["version"]
            inst.key.cluster_inst_key.cluster_key.name = AUTO["cluster_key"]["name"]
            inst.key.cluster_inst_key.cloudlet_key.operator_key.name = CLOUDLET["operator_key"][
                "name"
            ]
            inst.key.cluster_inst_key.cloudlet_key.name = CLOUDLET["name"]
            inst.key.cluster_inst_key.developer = AUTO["developer"]
            messages = [r.message async for r in stub.CreateAppInst(inst, metadata=bearer(token))]
            assert messages[0] == "Create requested" and messages[-1] == "Ready"
            [cluster_inst] = await api.show("clusterinst")
            assert cluster_inst["key"] == AUTO
            assert (cluster_inst["auto"], cluster_inst["liveness"]) == (True, "LIVENESS_DYNAMIC")
            assert (cluster_inst["ip_access"], cluster_inst["allocated_ip"]) == (
                "IP_ACCESS_DEDICATED",
                "dynamic",
            )
            assert cluster_inst["state"] == "READY"
            [cluster] = [c for c in await api.show("cluster") if c["key"] == AUTO["cluster_key"]]
            assert cluster["auto"] is True
            # Deleting its last AppInst removes the auto-cluster (and its Cluster) in turn.
            await api.progress(
                "/delete/appinst", {"key": {"app_key": APP, "cluster_inst_key": AUTO}}
            )

            async def auto_cluster_gone() -> bool:
                clusters = [c["key"]["name"] for c in await api.show("cluster")]
                return (
                    await api.show("clusterinst") == []
                    and AUTO["cluster_key"]["name"] not in clusters
                )

            await eventually(auto_cluster_gone, timeout=10)
            refs = await api.cloudlet_refs()
            assert refs.get("used_dynamic_ips", 0) == 0

    run(scenario())


async def _locations(api: Rest) -> list[dict]:
    return [i["cloudlet_loc"] for i in await api.show("appinst")]


def test_app_inst_cloudlet_loc_follows_its_cloudlet(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await build_world(api)
            berlin = {"latitude": 52.52, "longitude": 13.405}
            await api.progress(
                "/update/cloudlet", {"key": CLOUDLET, "location": berlin, "fields": ["location"]}
            )
            await api.progress("/create/clusterinst", {"key": CLUSTER_INST})
            await api.progress("/create/appinst", {"key": APP_INST})
            [loc] = await _locations(api)
            assert (loc["latitude"], loc["longitude"]) == (52.52, 13.405)
            moved = {"latitude": 48.1, "longitude": 11.6}
            await api.progress(
                "/update/cloudlet", {"key": CLOUDLET, "location": moved, "fields": ["location"]}
            )
            [loc] = await _locations(api)
            assert (loc["latitude"], loc["longitude"]) == (48.1, 11.6)

    run(scenario())
