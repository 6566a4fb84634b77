"""``edgeproto`` end to end: the original REST routes (NDJSON streams) and gRPC on a real port."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc
import pytest

from app.services.edge.presence import prune_stale
from app.services.edge.records import CONTROLLER_LEASE
from gen.edgeproto import (
    app_inst_pb2,
    app_inst_pb2_grpc,
    cloudlet_pb2,
    clusterinst_pb2,
    clusterinst_pb2_grpc,
    common_pb2,
    controller_pb2,
    controller_pb2_grpc,
    flavor_pb2,
    flavor_pb2_grpc,
    node_pb2,
    node_pb2_grpc,
    notice_pb2,
    notice_pb2_grpc,
    refs_pb2,
    refs_pb2_grpc,
)
from tests.harness import eventually, run, running
from tests.services.edge.world import (
    APP,
    APP_INST,
    CLOUDLET,
    CLUSTER_INST,
    DEVELOPER,
    OPERATOR,
    TIMEOUT,
    Rest,
    bearer,
    build_world,
    notify_socket,
    rest_api,
    violation_fields,
)

# -- plain objects: CRUD, fields, filters -------------------------------------------------------


@pytest.mark.parametrize(
    ("what", "body", "update"),
    [
        ("developer", {"key": {"name": "Blue Corp"}, "email": "a@b.c"}, ("6", "email", "x@y.z")),
        ("operator", {"key": {"name": "T-Mobile"}}, None),
        ("flavor", {"key": {"name": "m1.tiny"}, "ram": 512, "vcpus": 1}, ("4", "vcpus", 2)),
        ("cluster", {"key": {"name": "analytics"}}, None),
    ],
)
def test_crud_of_plain_objects_over_rest(tmp_path, what, body, update):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            assert await api.ok(f"/create/{what}", body) == {"message": "Created", "code": 0}
            status, error = await api.post(f"/create/{what}", body)
            assert (status, error["code"]) == (409, 6)
            assert "already exists" in error["message"]
            [shown] = await api.show(what, {"key": body["key"]})
            assert shown["key"] == body["key"]
            if update is not None:
                number, name, value = update
                await api.ok(
                    f"/update/{what}", {"key": body["key"], "fields": [number], name: value}
                )
                [shown] = await api.show(what, {"key": body["key"]})
                assert shown[name] in (value, str(value))
            missing = {"key": {**body["key"], "name": "nobody"}}
            if update is not None:
                status, error = await api.post(
                    f"/update/{what}", {**missing, "fields": [update[0]], update[1]: update[2]}
                )
                assert (status, error["code"]) == (404, 5), error
            status, error = await api.post(f"/delete/{what}", missing)
            assert (status, error["code"]) == (404, 5), error
            await api.ok(f"/delete/{what}", {"key": body["key"]})
            assert await api.show(what) == []
            status, error = await api.post(f"/delete/{what}", {"key": body["key"]})
            assert (status, error["code"]) == (404, 5)

    run(scenario())


def test_update_applies_only_listed_fields_by_number_name_or_nested_path(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await build_world(api)
            await api.ok("/create/flavor", {"key": {"name": "x1.big"}, "ram": 4096, "vcpus": 4})
            # Only image_path (4) changes; access_ports is sent but not listed.
            await api.ok(
                "/update/app",
                {"key": APP, "fields": ["4"], "image_path": "reg/p:2", "access_ports": "tcp:1"},
            )
            # A nested field by number ("9.1" = default_flavor.name) and a field by name.
            await api.ok(
                "/update/app",
                {
                    "key": APP,
                    "fields": ["9.1", "command"],
                    "default_flavor": {"name": "x1.big"},
                    "command": "serve",
                },
            )
            [app] = await api.show("app")
            assert app["image_path"] == "reg/p:2"
            assert app["access_ports"] == "tcp:443,udp:10002"
            assert app["default_flavor"] == {"name": "x1.big"}
            assert app["command"] == "serve"
            # Key fields, unknown fields and an empty list are refused, naming the entry.
            for fields, where in (
                (["2.2"], "fields[0]"),
                (["4", "key.version"], "fields[1]"),
                (["99"], "fields[0]"),
                ([], "fields"),
            ):
                status, error = await api.post(
                    "/update/app", {"key": APP, "fields": fields, "image_path": "x"}
                )
                assert (status, error["code"]) == (400, 3), error
                [violation] = error["details"][0]["field_violations"]
                assert violation["field"] == where
            # A reference changed by Update is checked too.
            status, error = await api.post(
                "/update/app",
                {"key": APP, "fields": ["9.1"], "default_flavor": {"name": "nope"}},
            )
            assert (status, error["code"]) == (404, 5)
            assert "default_flavor" in error["message"]

    run(scenario())


def test_show_filters_on_the_non_empty_fields_over_grpc(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            api = Rest(server, token)
            for name, ram, vcpus in (("a", 1024, 1), ("b", 2048, 1), ("c", 1024, 2)):
                await api.ok("/create/flavor", {"key": {"name": name}, "ram": ram, "vcpus": vcpus})
            stub = flavor_pb2_grpc.FlavorApiStub(server.channel)

            async def names(**wanted: Any) -> list[str]:
                call = stub.ShowFlavor(flavor_pb2.Flavor(**wanted), metadata=bearer(token))
                return [flavor.key.name async for flavor in call]

            assert await names() == ["a", "b", "c"]
            assert await names(ram=1024) == ["a", "c"]
            assert await names(ram=1024, vcpus=2) == ["c"]
            assert await names(key=flavor_pb2.FlavorKey(name="b")) == ["b"]
            assert await names(ram=4096) == []

    run(scenario())


# -- references ------------------------------------------------------------------------------


def test_references_are_checked_on_create_and_delete(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            status, error = await api.post(
                "/create/app", {"key": APP, "default_flavor": {"name": "x1.small"}}
            )
            assert (status, error["code"]) == (404, 5)
            assert error["message"].startswith("key.developer_key: Developer")
            status, error = await api.post("/create/cloudlet", {"key": CLOUDLET})
            assert (status, error["code"]) == (404, 5)
            assert "Operator" in error["message"]
            await build_world(api)
            status, error = await api.post(
                "/create/clusterinst", {"key": {**CLUSTER_INST, "developer": "Ghost"}}
            )
            assert (status, error["code"]) == (404, 5)
            assert "key.developer: Developer" in error["message"]
            status, error = await api.post("/create/appinst", {"key": APP_INST})
            assert (status, error["code"]) == (404, 5)
            assert "ClusterInst" in error["message"]
            await api.progress("/create/clusterinst", {"key": CLUSTER_INST})
            await api.progress("/create/appinst", {"key": APP_INST})

            # Deleting what is referenced names the referrer.
            for path, body, referrer in (
                ("/delete/developer", {"key": DEVELOPER}, "App"),
                ("/delete/operator", {"key": OPERATOR}, "Cloudlet"),
                ("/delete/flavor", {"key": {"name": "x1.small"}}, "App"),
                ("/delete/cluster", {"key": {"name": "games"}}, "ClusterInst"),
                ("/delete/app", {"key": APP}, "AppInst"),
                ("/delete/cloudet", {"key": CLOUDLET}, "ClusterInst"),
                ("/delete/cloudlet", {"key": CLOUDLET}, "ClusterInst"),
                ("/delete/clusterinst", {"key": CLUSTER_INST}, "AppInst"),
            ):
                status, error = await api.post(path, body)
                assert (status, error["code"]) == (400, 9), (path, error)
                assert f"is in use by {referrer}" in error["message"], error

            # Deleting bottom-up succeeds, the cloudlet through the original's misspelt route.
            assert await api.progress("/delete/appinst", {"key": APP_INST}) == [
                "Delete requested",
                "Deleting Kubernetes Deployment pokemon-1-0",
                "Deleted",
            ]
            await api.progress("/delete/clusterinst", {"key": CLUSTER_INST})
            await api.progress("/delete/cloudet", {"key": CLOUDLET})
            for what, key in (("app", APP), ("cluster", {"name": "games"}), ("operator", OPERATOR)):
                await api.ok(f"/delete/{what}", {"key": key})
            assert await api.show("cloudletinfo") == []
            assert await api.show("appinst") == []

    run(scenario())


def test_invalid_names_are_refused_naming_the_field(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            status, error = await api.post("/create/developer", {"key": {"name": ""}})
            assert (status, error["code"]) == (400, 3)
            assert error["details"][0]["field_violations"][0]["field"] == "key.name"
            status, error = await api.post(
                "/create/flavor", {"key": {"name": "bad name"}, "ram": 0, "vcpus": 1}
            )
            fields = {v["field"] for v in error["details"][0]["field_violations"]}
            assert fields == {"key.name", "ram"}
            assert await api.show("flavor") == []

    run(scenario())


# -- tracked objects: progress streams, info objects, capacity -------------------------------


def test_cluster_inst_create_streams_progress_and_the_info_reaches_ready_over_grpc(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            api = Rest(server, token)
            await build_world(api)
            stub = clusterinst_pb2_grpc.ClusterInstApiStub(server.channel)
            inst = clusterinst_pb2.ClusterInst()
            inst.key.cluster_key.name = "games"
            inst.key.cloudlet_key.operator_key.name = OPERATOR["name"]
            inst.key.cloudlet_key.name = CLOUDLET["name"]
            inst.key.developer = DEVELOPER["name"]
            inst.num_nodes = 2
            call = stub.CreateClusterInst(inst, metadata=bearer(token))
            messages = [result.message async for result in call]
            # The messages follow the work: one step per node, as the original CRM reported.
            assert messages == [
                "Create requested",
                "Creating Heat Stack for games",
                "Creating node 1 of 2 (sim.small)",
                "Creating node 2 of 2 (sim.small)",
                "Waiting for Cluster to Initialize",
                "Ready",
            ]

            infos = clusterinst_pb2_grpc.ClusterInstInfoApiStub(server.channel)
            [info] = [
                i
                async for i in infos.ShowClusterInstInfo(
                    clusterinst_pb2.ClusterInstInfo(), metadata=bearer(token)
                )
            ]
            assert info.key == inst.key
            assert info.state == common_pb2.READY
            [stored] = [
                c
                async for c in stub.ShowClusterInst(
                    clusterinst_pb2.ClusterInst(), metadata=bearer(token)
                )
            ]
            assert stored.state == info.state
            assert stored.flavor.name == "x1.small"  # the Cluster's default flavor
            assert (stored.num_masters, stored.num_nodes) == (0, 2)
            assert stored.node_flavor == "sim.small"

            # The cloudlet accounts two nodes of x1.small.
            refs = refs_pb2_grpc.CloudletRefsApiStub(server.channel)
            [used] = [
                r
                async for r in refs.ShowCloudletRefs(
                    refs_pb2.CloudletRefs(), metadata=bearer(token)
                )
            ]
            assert (used.used_ram, used.used_vcores, used.used_disk) == (2048, 2, 20)
            assert [c.name for c in used.clusters] == ["games"]

            # A second create of the same key is ALREADY_EXISTS on the stream.
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in stub.CreateClusterInst(inst, metadata=bearer(token)):
                    pass
            assert caught.value.code() is grpc.StatusCode.ALREADY_EXISTS

            # Update with a listed field runs through the resource manager again.
            inst.num_nodes = 3
            inst.fields.append("14")
            call = stub.UpdateClusterInst(inst, metadata=bearer(token))
            assert [r.message async for r in call] == [
                "Update requested",
                "Updating Heat Stack for games",
                *(f"Updating node {n} of 3 (sim.small)" for n in (1, 2, 3)),
                "Waiting for Cluster to Initialize",
                "Ready",
            ]
            [used] = [
                r
                async for r in refs.ShowCloudletRefs(
                    refs_pb2.CloudletRefs(), metadata=bearer(token)
                )
            ]
            assert used.used_ram == 3072

            call = stub.DeleteClusterInst(inst, metadata=bearer(token))
            assert [r.message async for r in call] == [
                "Delete requested",
                "Deleting Heat Stack for games",
                "Deleted",
            ]
            [used] = [
                r
                async for r in refs.ShowCloudletRefs(
                    refs_pb2.CloudletRefs(), metadata=bearer(token)
                )
            ]
            assert (used.used_ram, list(used.clusters)) == (0, [])
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in stub.DeleteClusterInst(inst, metadata=bearer(token)):
                    pass
            assert caught.value.code() is grpc.StatusCode.NOT_FOUND

    run(scenario())


def test_capacity_is_accounted_and_exhaustion_refused(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            api = Rest(server, token)
            await build_world(api, flavor_ram=16384)
            # 16 GB nodes: three fit in the 64 GB cloudlet, a fourth does not.
            body = {"key": CLUSTER_INST, "num_nodes": 3}
            await api.progress("/create/clusterinst", body)
            await api.ok("/create/cluster", {"key": {"name": "more"}})
            more = {**CLUSTER_INST, "cluster_key": {"name": "more"}}
            status, error = await api.post(
                "/create/clusterinst", {"key": more, "flavor": {"name": "x1.small"}, "num_nodes": 2}
            )
            assert (status, error["code"]) == (429, 8), error
            assert "RAM MB 81920 > 65536" in error["message"]
            assert await api.show("clusterinst", {"key": more}) == []

            # AppInsts fill the ClusterInst: three of 16 GB fit in 48 GB, the fourth does not.
            stub = app_inst_pb2_grpc.AppInstApiStub(server.channel)
            for version in ("1.0", "2.0", "3.0", "4.0"):
                if version != "1.0":
                    await api.ok(
                        "/create/app",
                        {
                            "key": {**APP, "version": version},
                            "default_flavor": {"name": "x1.small"},
                        },
                    )
                inst = app_inst_pb2.AppInst()
                inst.key.app_key.developer_key.name = DEVELOPER["name"]
                inst.key.app_key.name = APP["name"]
                inst.key.app_key.version = version
                inst.key.cluster_inst_key.CopyFrom(
                    clusterinst_pb2.ClusterInstKey(
                        cluster_key={"name": "games"},
                        cloudlet_key={"operator_key": OPERATOR, "name": CLOUDLET["name"]},
                        developer=DEVELOPER["name"],
                    )
                )
                call = stub.CreateAppInst(inst, metadata=bearer(token))
                if version != "4.0":
                    assert [r.message async for r in call][-1] == "Ready"
                    continue
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    async for _ in call:
                        pass
                assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            status, lines = await api.post("/v1/edge/clusterrefs:show", {})
            [refs] = [line["result"] for line in lines]
            assert refs["used_ram"] == str(3 * 16384)
            assert len(refs["apps"]) == 3
            # A ClusterInst cannot shrink below what its AppInsts use.
            status, error = await api.post(
                "/update/clusterinst", {"key": CLUSTER_INST, "fields": ["14"], "num_nodes": 2}
            )
            assert (status, error["code"]) == (400, 9), error

    run(scenario())


def test_an_operation_resumes_after_a_restart(tmp_path):
    async def scenario() -> None:
        step = 0.05
        async with running(tmp_path, sim_step_seconds=step) as server:
            api = await rest_api(server)
            await build_world(api)
            token = await server.login()
            stub = clusterinst_pb2_grpc.ClusterInstApiStub(server.channel)
            inst = clusterinst_pb2.ClusterInst(
                key=clusterinst_pb2.ClusterInstKey(
                    cluster_key={"name": "games"},
                    cloudlet_key={"operator_key": OPERATOR, "name": CLOUDLET["name"]},
                    developer=DEVELOPER["name"],
                )
            )
            call = stub.CreateClusterInst(inst, metadata=bearer(token))
            first = await anext(aiter(call))
            assert first.message == "Create requested"
            call.cancel()
        async with running(tmp_path, sim_step_seconds=step) as server:
            api = await rest_api(server)

            async def ready() -> bool:
                return (await api.show("clusterinstinfo"))[0]["state"] == "READY"

            await eventually(ready, TIMEOUT, what="the ClusterInst READY after the restart")

    run(scenario())


# -- exec, metrics, admin-only ---------------------------------------------------------------


def test_exec_checks_the_app_inst_and_container_and_answers(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await build_world(api)
            request = {"app_inst_key": APP_INST, "command": "ls /"}
            status, error = await api.post("/v1/edge/exec:run", request)
            assert (status, error["code"]) == (404, 5)
            await api.progress("/create/clusterinst", {"key": CLUSTER_INST})
            await api.progress("/create/appinst", {"key": APP_INST})
            reply = await api.ok("/v1/edge/exec:run", request)
            assert reply["container_id"] == "pokemon-1-0"
            assert "s=exec pokemon-1-0" in reply["answer"]
            again = await api.ok("/v1/edge/exec:sendLocal", request)
            assert again["answer"] == reply["answer"]
            status, error = await api.post(
                "/v1/edge/exec:run", {**request, "container_id": "other"}
            )
            assert (status, error["code"]) == (404, 5)
            assert "no container 'other'" in error["message"]
            status, error = await api.post("/v1/edge/exec:run", {"app_inst_key": APP_INST})
            assert (status, error["code"]) == (400, 3)

    run(scenario())


def test_metrics_follow_the_simulated_state(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await build_world(api)
            assert await api.show("cloudletmetrics") == [{"foo": "0"}]
            assert await api.show("appinstmetrics") == []
            await api.progress("/create/clusterinst", {"key": CLUSTER_INST, "num_nodes": 2})
            await api.progress("/create/appinst", {"key": APP_INST})
            assert await api.show("cloudletmetrics") == [{"foo": "2048"}]
            assert await api.show("appinstmetrics") == [{"something": "1024"}]
            assert await api.show("cloudletmetrics", {"foo": "7"}) == []

    run(scenario())


def test_admin_only_rpcs_are_refused_to_an_operator(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            admin = await rest_api(server)
            await build_world(admin)
            operator = Rest(server, await server.add_account("ops", "operator"))
            info = {"key": CLOUDLET, "os_max_ram": 100}
            for path in (
                "/v1/edge/cloudletinfo:inject",
                "/v1/edge/cloudletinfo:evict",
                "/v1/edge/cloudletrefs:show",
                "/v1/edge/notices:stream",
            ):
                status, _ = await operator.post(path, info)
                assert status == 403, path
            assert (await operator.post("/show/cloudlet", {}))[0] == 200
            # The admin may inject: a smaller cloudlet then refuses a big ClusterInst.
            await admin.ok("/v1/edge/cloudletinfo:inject", info)
            [shown] = await admin.show("cloudletinfo")
            assert shown["os_max_ram"] == "100"
            status, error = await admin.post("/create/clusterinst", {"key": CLUSTER_INST})
            assert (status, error["code"]) == (429, 8)
            await admin.ok("/v1/edge/cloudletinfo:evict", info)
            status, _ = await admin.post("/v1/edge/cloudletinfo:evict", info)
            assert status == 404

    run(scenario())


# -- controllers, nodes and the sync protocol ------------------------------------------------


def test_show_controller_lists_live_replicas_only(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            stub = controller_pb2_grpc.ControllerApiStub(server.channel)

            async def addresses() -> list[str]:
                call = stub.ShowController(controller_pb2.Controller(), metadata=bearer(token))
                return [c.key.addr async for c in call]

            [mine] = await addresses()
            assert mine.endswith(f"/{__import__('os').getpid()}")
            # A replica that stopped renewing its lease long ago is neither shown nor kept.
            store = server.portico.store
            gone = controller_pb2.Controller(key=controller_pb2.ControllerKey(addr="old:1/1"))
            await store.create("edgeproto.Controller", '{"addr":"old:1/1"}', gone)
            await store.create(CONTROLLER_LEASE, "old:1/1", b"\x08\x01")  # 1970
            assert await addresses() == [mine]
            assert await prune_stale(store) == 1
            assert await store.get("edgeproto.Controller", '{"addr":"old:1/1"}') is None

    run(scenario())


def _notice(action: int, obj: Any = None, **fields: Any) -> notice_pb2.Notice:
    notice = notice_pb2.Notice(action=action, **fields)
    if obj is not None:
        notice.any.Pack(obj)
    return notice


def test_notify_stream_over_grpc_syncs_then_follows_and_stores_peer_infos(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            api = Rest(server, token)
            await build_world(api)
            outgoing: asyncio.Queue[notice_pb2.Notice | None] = asyncio.Queue()

            async def requests():
                while (notice := await outgoing.get()) is not None:
                    yield notice

            me = node_pb2.Node(key=node_pb2.NodeKey(name="crm-berlin", node_type=node_pb2.NODE_CRM))
            me.key.cloudlet_key.CopyFrom(_world_cloudlet())  # the CRM of the world's cloudlet
            await outgoing.put(_notice(notice_pb2.VERSION, me, version=1))
            stub = notice_pb2_grpc.NotifyApiStub(server.channel)
            call = stub.StreamNotice(requests(), metadata=bearer(token))
            replies = aiter(call)
            hello = await anext(replies)
            assert (hello.action, hello.version) == (notice_pb2.VERSION, 1)
            sent = []
            while (notice := await anext(replies)).action != notice_pb2.SENDALL_END:
                assert notice.action == notice_pb2.UPDATE
                sent.append(notice.any.TypeName())
            assert sent == [
                "edgeproto.Flavor",
                "edgeproto.Developer",
                "edgeproto.Operator",
                "edgeproto.Cluster",
                "edgeproto.App",
                "edgeproto.Cloudlet",
            ]
            # The peer is a node while connected.
            nodes = node_pb2_grpc.NodeApiStub(server.channel)
            for show in (nodes.ShowNode, nodes.ShowNodeLocal):
                [node] = [n async for n in show(node_pb2.Node(), metadata=bearer(token))]
                assert node.key.name == "crm-berlin" and node.notify_id > 0
            # A live change arrives as it commits.
            await api.ok("/create/flavor", {"key": {"name": "x2.live"}, "ram": 1, "vcpus": 1})
            live = await asyncio.wait_for(anext(replies), TIMEOUT)
            flavor = flavor_pb2.Flavor()
            assert live.action == notice_pb2.UPDATE and live.any.Unpack(flavor)
            assert flavor.key.name == "x2.live"
            await api.ok("/delete/flavor", {"key": {"name": "x2.live"}})
            gone = await asyncio.wait_for(anext(replies), TIMEOUT)
            assert gone.action == notice_pb2.DELETE
            # The peer reports a CloudletInfo back; it is stored.
            report = cloudlet_pb2.CloudletInfo(
                key=cloudlet_pb2.CloudletKey(
                    operator_key={"name": OPERATOR["name"]}, name=CLOUDLET["name"]
                ),
                state=cloudlet_pb2.CLOUDLET_STATE_OFFLINE,
            )
            await outgoing.put(_notice(notice_pb2.UPDATE, report))

            async def offline() -> bool:
                return (await api.show("cloudletinfo"))[0]["state"] == "CLOUDLET_STATE_OFFLINE"

            await eventually(offline, TIMEOUT, what="the peer's CloudletInfo report stored")
            # Half-closing ends the sync and the node goes away.
            await outgoing.put(None)
            assert [n async for n in call] == []
            assert await call.code() is grpc.StatusCode.OK
            assert [n async for n in nodes.ShowNode(node_pb2.Node(), metadata=bearer(token))] == []

    run(scenario())


def _world_cloudlet() -> cloudlet_pb2.CloudletKey:
    return cloudlet_pb2.CloudletKey(operator_key={"name": OPERATOR["name"]}, name=CLOUDLET["name"])


async def _peer_refused(server: Any, token: str, me: Any, report: Any = None) -> Any:
    """A Notify session as ``me`` that sends ``report`` after the snapshot: the error it ends
    with (None when it is not refused)."""
    stub = notice_pb2_grpc.NotifyApiStub(server.channel)
    synced = asyncio.Event()

    async def requests():
        yield _notice(notice_pb2.VERSION, me, version=1)
        if report is not None:
            await synced.wait()
            yield _notice(notice_pb2.UPDATE, report)
        await asyncio.sleep(60)  # held open: only a refusal ends this session soon

    try:
        async with asyncio.timeout(TIMEOUT):
            async for notice in stub.StreamNotice(requests(), metadata=bearer(token)):
                if notice.action == notice_pb2.SENDALL_END:
                    if report is None:
                        return None
                    synced.set()
    except grpc.aio.AioRpcError as error:
        return error
    return None


def test_a_crm_reports_only_for_its_own_cloudlet_and_its_account_binds_it(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            api = Rest(server, token)
            await build_world(api)
            other = cloudlet_pb2.CloudletKey(operator_key={"name": "Other Telecom"}, name="far")
            offline = cloudlet_pb2.CLOUDLET_STATE_OFFLINE
            crm = node_pb2.Node(key=node_pb2.NodeKey(name="crm-far", node_type=node_pb2.NODE_CRM))
            crm.key.cloudlet_key.CopyFrom(other)
            # The CRM of another cloudlet cannot report for the world's.
            report = cloudlet_pb2.CloudletInfo(key=_world_cloudlet(), state=offline)
            refused = await _peer_refused(server, token, crm, report)
            assert refused is not None and refused.code() is grpc.StatusCode.PERMISSION_DENIED
            assert "the CRM of cloudlet 'far' of 'Other Telecom'" in refused.details()
            # Nor can a peer that is no CRM of any cloudlet.
            dme = node_pb2.Node(key=node_pb2.NodeKey(name="dme-1", node_type=node_pb2.NODE_DME))
            refused = await _peer_refused(server, token, dme, report)
            assert refused is not None and refused.code() is grpc.StatusCode.PERMISSION_DENIED
            assert "only as the CRM of its cloudlet" in refused.details()
            [info] = await api.show("cloudletinfo")
            assert info["state"] != "CLOUDLET_STATE_OFFLINE"  # nothing was stored
            # An account bound to an operator is the CRM of that operator's cloudlets only.
            bound = await server.add_account("crm-acct", "admin", operator="Other Telecom")
            mine = await _peer_refused(server, bound, crm)
            assert mine is None
            theirs = node_pb2.Node(key=node_pb2.NodeKey(name="crm-w", node_type=node_pb2.NODE_CRM))
            theirs.key.cloudlet_key.CopyFrom(_world_cloudlet())
            refused = await _peer_refused(server, bound, theirs)
            assert refused is not None and refused.code() is grpc.StatusCode.PERMISSION_DENIED
            assert "acts for 'Other Telecom'" in refused.details()

    run(scenario())


def test_notify_refuses_a_stream_not_starting_with_version(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            stub = notice_pb2_grpc.NotifyApiStub(server.channel)

            async def requests():
                yield _notice(notice_pb2.UPDATE)

            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in stub.StreamNotice(requests(), metadata=bearer(token)):
                    pass
            assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            assert violation_fields(caught.value) == ["action"]

    run(scenario())


def test_notify_over_rest_and_websocket(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            api = Rest(server, token)
            await build_world(api)
            # Half-duplex NDJSON: the snapshot, filtered to the wanted types.
            hello = {"action": "VERSION", "version": 1, "want_objs": ["App", "edgeproto.Flavor"]}
            lines = await api.ok("/v1/edge/notices:stream", hello)
            actions = [line["result"]["action"] for line in lines]
            assert actions == ["VERSION", "UPDATE", "UPDATE", "SENDALL_END"]
            types = [line["result"]["any"]["@type"].rsplit("/", 1)[1] for line in lines[1:3]]
            assert types == ["edgeproto.Flavor", "edgeproto.App"]
            # A WebSocket stays live after the snapshot.
            async with notify_socket(server, token) as socket:
                await socket.send(json.dumps({**hello, "want_objs": ["Operator"]}))
                received = [json.loads(await socket.recv())["result"] for _ in range(3)]
                assert [r["action"] for r in received] == ["VERSION", "UPDATE", "SENDALL_END"]
                await api.ok("/create/operator", {"key": {"name": "Live Op"}})
                live = json.loads(await asyncio.wait_for(socket.recv(), TIMEOUT))["result"]
                assert live["action"] == "UPDATE"
                assert live["any"]["key"] == {"name": "Live Op"}
                await socket.send("")  # half-close ends the sync
                assert [message async for message in socket] == []

    run(scenario())


def test_demo_seeds_a_consistent_edge_world(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, demo=True) as server:
            api = await rest_api(server)

            async def app_inst_ready() -> bool:
                insts = await api.show("appinst")
                return bool(insts) and insts[0]["state"] == "READY"

            await eventually(app_inst_ready, TIMEOUT, what="the demo's AppInst READY")
            for what in ("operator", "developer", "flavor", "cloudlet", "cluster", "app"):
                assert len(await api.show(what)) == 1, what
            [cluster] = await api.show("clusterinst")
            assert cluster["state"] == "READY"
            _status, lines = await api.post("/v1/edge/clusterrefs:show", {})
            assert [line["result"]["used_ram"] for line in lines] == ["2048"]

    run(scenario())
