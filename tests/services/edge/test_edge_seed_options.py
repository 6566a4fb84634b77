"""Seed options that act: AUTO_DELETE, auto-clusters with their ip_access, cloudlet_loc."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from gen.edgeproto import (
    app_inst_pb2,
    app_inst_pb2_grpc,
    common_pb2,
    notice_pb2,
    notice_pb2_grpc,
)
from tests.harness import run, running
from tests.services.edge.world import (
    APP,
    APP_INST,
    CLOUDLET,
    CLUSTER_INST,
    TIMEOUT,
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
            # A Notify peer watching AppInsts sees the delete's progress before the App goes.
            outgoing: asyncio.Queue[notice_pb2.Notice | None] = asyncio.Queue()
            hello = notice_pb2.Notice(action=notice_pb2.VERSION, version=1, want_objs=["AppInst"])
            outgoing.put_nowait(hello)

            async def requests() -> AsyncIterator[notice_pb2.Notice]:
                while (notice := await outgoing.get()) is not None:
                    yield notice

            stub = notice_pb2_grpc.NotifyApiStub(server.channel)
            watch = aiter(stub.StreamNotice(requests(), metadata=bearer(api.token)))
            while (await asyncio.wait_for(anext(watch), TIMEOUT)).action != notice_pb2.SENDALL_END:
                pass
            assert await api.ok("/delete/app", {"key": APP}) == {"message": "Deleted", "code": 0}
            seen: list[tuple[str, int]] = []
            while not seen or seen[-1][0] != "DELETE":
                notice = await asyncio.wait_for(anext(watch), TIMEOUT)
                inst = app_inst_pb2.AppInst()
                notice.any.Unpack(inst)
                seen.append((notice_pb2.NoticeAction.Name(notice.action), inst.state))
            outgoing.put_nowait(None)  # half-closed, the sync ends
            assert [notice async for notice in watch] == []
            assert seen == [
                ("UPDATE", common_pb2.DELETE_REQUESTED),
                ("UPDATE", common_pb2.DELETING),
                ("DELETE", common_pb2.DELETING),
            ]
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
