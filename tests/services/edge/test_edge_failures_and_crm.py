"""Edge operations that fail (simulated faults, an external CRM's errors) and crm_override."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from app.services.edge.progress import Progress
from app.services.edge.resource_manager import FAULTS, Faults
from app.sim.machines import FaultInjection
from gen.edgeproto import (
    app_inst_pb2,
    app_inst_pb2_grpc,
    cloudlet_pb2,
    cloudlet_pb2_grpc,
    clusterinst_pb2,
    clusterinst_pb2_grpc,
    common_pb2,
    node_pb2,
    notice_pb2,
    notice_pb2_grpc,
)
from tests.harness import run, running
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
)
from tests.services.kudo.world import eventually


async def _parents(api: Rest) -> None:
    """Everything a ClusterInst needs but its Cloudlet."""
    await api.ok("/create/operator", {"key": OPERATOR})
    await api.ok("/create/developer", {"key": DEVELOPER})
    await api.ok("/create/flavor", {"key": {"name": "x1.small"}, "ram": 1024, "vcpus": 1})
    await api.ok(
        "/create/cluster", {"key": {"name": "games"}, "default_flavor": {"name": "x1.small"}}
    )


async def _failed_cloudlet_brought_up(api: Rest) -> None:
    """On a server where everything fails: the Cloudlet fails, then an admin's injected
    CloudletInfo (the regression tool) says it is up after all."""
    await _parents(api)
    await api.post("/create/cloudlet", {"key": CLOUDLET})
    await api.ok("/v1/edge/cloudletinfo:inject", {"key": CLOUDLET, "state": "CLOUDLET_STATE_READY"})


def _cluster_inst(**fields: Any) -> clusterinst_pb2.ClusterInst:
    inst = clusterinst_pb2.ClusterInst(**fields)
    inst.key.cluster_key.name = "games"
    inst.key.cloudlet_key.operator_key.name = OPERATOR["name"]
    inst.key.cloudlet_key.name = CLOUDLET["name"]
    inst.key.developer = DEVELOPER["name"]
    return inst


async def _messages(call: Any) -> tuple[list[tuple[str, int]], grpc.aio.AioRpcError | None]:
    """Every Result of a progress stream, and the error it ended with (if any)."""
    seen = []
    try:
        async for result in call:
            seen.append((result.message, result.code))
    except grpc.aio.AioRpcError as error:
        return seen, error
    return seen, None


def test_simulated_failures_give_error_states_and_failed_creates_can_be_deleted(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_failure_ratio=1.0) as server:
            api = await rest_api(server)
            await _parents(api)
            # REST: the progress stream ends with a failed Result (code 2) and the error.
            status, lines = await api.post("/create/cloudlet", {"key": CLOUDLET})
            assert status == 200
            *steps, failed, error = lines
            assert steps[0]["result"]["message"] == "Create requested"
            assert failed["result"]["code"] == 2
            assert failed["result"]["message"].startswith("Create Cloudlet failed: ")
            assert "(simulated fault)" in failed["result"]["message"]
            assert error["error"]["code"] == 2
            assert error["error"]["message"] == failed["result"]["message"]
            [info] = await api.show("cloudletinfo")
            assert info["state"] == "CLOUDLET_STATE_ERRORS"
            assert info["errors"] and info["errors"][0] in failed["result"]["message"]

            # gRPC: a ClusterInst on the failed Cloudlet fails too, naming why.
            token = api.token
            stub = clusterinst_pb2_grpc.ClusterInstApiStub(server.channel)
            seen, error = await _messages(
                stub.CreateClusterInst(_cluster_inst(), metadata=bearer(token))
            )
            assert error is not None and error.code() is grpc.StatusCode.UNKNOWN
            assert seen[-1][1] == 2 and "Cloudlet" in seen[-1][0] and "is in error" in seen[-1][0]
            [inst] = await api.show("clusterinst")
            assert inst["state"] == "CREATE_ERROR"
            assert "is in error" in inst["errors"][0]
            refs = await api.cloudlet_refs()
            assert refs["used_ram"] == "1024"

            # What failed can be deleted (nothing was built, so no CRM is asked and nothing
            # fails), giving back what it held.
            seen, error = await _messages(
                stub.DeleteClusterInst(_cluster_inst(), metadata=bearer(token))
            )
            assert error is None and seen == [("Deleted", 0)]
            assert await api.progress("/delete/cloudlet", {"key": CLOUDLET}) == ["Deleted"]
            assert await api.show("cloudletinfo") == []
            assert await api.ok("/v1/edge/cloudletrefs:show", {}) == []

    run(scenario())


def test_a_failed_create_is_retried_and_ignore_crm_errors_lets_it_through(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_failure_ratio=1.0) as server:
            api = await rest_api(server)
            token = api.token
            await _failed_cloudlet_brought_up(api)
            stub = clusterinst_pb2_grpc.ClusterInstApiStub(server.channel)
            seen, error = await _messages(
                stub.CreateClusterInst(_cluster_inst(), metadata=bearer(token))
            )
            assert error is not None and error.code() is grpc.StatusCode.UNKNOWN
            assert "(simulated fault)" in error.details()
            assert error.details().startswith("Create ClusterInst failed: ")
            # A retry is a Create of the same key; still failing, then with errors ignored.
            seen, error = await _messages(
                stub.CreateClusterInst(_cluster_inst(), metadata=bearer(token))
            )
            assert error is not None and error.code() is grpc.StatusCode.UNKNOWN
            retry = _cluster_inst(crm_override=common_pb2.IGNORE_CRM_ERRORS)
            seen, error = await _messages(stub.CreateClusterInst(retry, metadata=bearer(token)))
            assert error is None and seen[-1] == ("Ready", 0)
            [inst] = await api.show("clusterinst")
            assert (inst["state"], inst.get("errors", [])) == ("READY", [])
            # The retries reserved the cloudlet's resources once, not three times.
            refs = await api.cloudlet_refs()
            assert refs["used_ram"] == "1024"
            # Creating a READY one again is still ALREADY_EXISTS.
            seen, error = await _messages(
                stub.CreateClusterInst(_cluster_inst(), metadata=bearer(token))
            )
            assert error is not None and error.code() is grpc.StatusCode.ALREADY_EXISTS

    run(scenario())


class Crm:
    """An external cloudlet resource manager on the Notify stream, for one cloudlet."""

    def __init__(self, server: Any, token: str) -> None:
        self.outgoing: asyncio.Queue[notice_pb2.Notice | None] = asyncio.Queue()
        me = node_pb2.Node(
            key=node_pb2.NodeKey(
                name="crm-berlin",
                node_type=node_pb2.NODE_CRM,
                cloudlet_key=cloudlet_pb2.CloudletKey(
                    operator_key={"name": OPERATOR["name"]}, name=CLOUDLET["name"]
                ),
            )
        )
        hello = notice_pb2.Notice(action=notice_pb2.VERSION, version=1, filter_cloudlet_key=True)
        hello.any.Pack(me)
        self.outgoing.put_nowait(hello)
        stub = notice_pb2_grpc.NotifyApiStub(server.channel)
        self.call = stub.StreamNotice(self._requests(), metadata=bearer(token))
        self.replies = aiter(self.call)

    async def _requests(self) -> AsyncIterator[notice_pb2.Notice]:
        while (notice := await self.outgoing.get()) is not None:
            yield notice

    @classmethod
    @contextlib.asynccontextmanager
    async def synced(cls, server: Any, token: str) -> AsyncIterator[Crm]:
        """A CRM connected and past the initial sync, until the block ends (then it
        half-closes, and the stream must end)."""
        crm = cls(server, token)
        try:
            while (
                await asyncio.wait_for(anext(crm.replies), TIMEOUT)
            ).action != notice_pb2.SENDALL_END:
                pass
            yield crm
            await crm.close()
        finally:
            crm.call.cancel()

    async def next_cluster_inst(self, state: int) -> clusterinst_pb2.ClusterInst:
        """The next ClusterInst the controller sends in ``state``."""
        while True:
            notice = await asyncio.wait_for(anext(self.replies), TIMEOUT)
            inst = clusterinst_pb2.ClusterInst()
            if notice.any.Unpack(inst) and inst.state == state:
                return inst

    def report(self, key: Any, state: int, *errors: str) -> None:
        info = clusterinst_pb2.ClusterInstInfo(key=key, state=state, errors=list(errors))
        notice = notice_pb2.Notice(action=notice_pb2.UPDATE)
        notice.any.Pack(info)
        self.outgoing.put_nowait(notice)

    async def close(self) -> None:
        self.outgoing.put_nowait(None)
        async for _ in self.replies:
            pass


def test_an_external_crm_drives_cluster_insts_and_crm_override_behaves(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            token = api.token
            await build_world(api)  # the cloudlet is built by the simulated CRM
            async with Crm.synced(server, token) as crm:
                stub = clusterinst_pb2_grpc.ClusterInstApiStub(server.channel)

                # The CRM, not the simulation, decides: CREATING, then CREATE_ERROR.
                create = asyncio.ensure_future(
                    _messages(stub.CreateClusterInst(_cluster_inst(), metadata=bearer(token)))
                )
                asked = await crm.next_cluster_inst(common_pb2.CREATE_REQUESTED)
                crm.report(asked.key, common_pb2.CREATING)
                await eventually(lambda: _state_is(api, "CREATING"), timeout=TIMEOUT)
                crm.report(asked.key, common_pb2.CREATE_ERROR, "out of floating IPs")
                seen, error = await asyncio.wait_for(create, TIMEOUT)
                assert [m for m, _ in seen] == [
                    "Create requested",
                    "Creating",
                    "Create ClusterInst failed: out of floating IPs",
                ]
                assert error is not None and error.code() is grpc.StatusCode.UNKNOWN
                [inst] = await api.show("clusterinst")
                assert (inst["state"], inst["errors"]) == ("CREATE_ERROR", ["out of floating IPs"])

                # The retry succeeds when the CRM says READY.
                create = asyncio.ensure_future(
                    _messages(stub.CreateClusterInst(_cluster_inst(), metadata=bearer(token)))
                )
                asked = await crm.next_cluster_inst(common_pb2.CREATE_REQUESTED)
                crm.report(asked.key, common_pb2.READY)
                seen, error = await asyncio.wait_for(create, TIMEOUT)
                assert error is None and seen[-1] == ("Ready", 0)

                # IGNORE_CRM_ERRORS: an update the CRM fails still ends READY.
                update = _cluster_inst(num_nodes=2, crm_override=common_pb2.IGNORE_CRM_ERRORS)
                update.fields.extend(["num_nodes", "crm_override"])
                call = asyncio.ensure_future(
                    _messages(stub.UpdateClusterInst(update, metadata=bearer(token)))
                )
                asked = await crm.next_cluster_inst(common_pb2.UPDATE_REQUESTED)
                crm.report(asked.key, common_pb2.UPDATE_ERROR, "flaky hypervisor")
                seen, error = await asyncio.wait_for(call, TIMEOUT)
                assert error is None and seen[-1] == ("Ready", 0)

                # A delete the CRM never answers keeps the object busy ...
                call = asyncio.ensure_future(
                    _messages(stub.DeleteClusterInst(_cluster_inst(), metadata=bearer(token)))
                )
                await crm.next_cluster_inst(common_pb2.DELETE_REQUESTED)
                update.num_nodes = 3
                seen, error = await _messages(
                    stub.UpdateClusterInst(update, metadata=bearer(token))
                )
                assert error is not None and error.code() is grpc.StatusCode.FAILED_PRECONDITION
                assert "DELETE_REQUESTED" in error.details()
                # ... until an admin ignores the transient state and the CRM: gone at once.
                force = _cluster_inst(crm_override=common_pb2.IGNORE_CRM_AND_TRANSIENT_STATE)
                seen, error = await _messages(stub.DeleteClusterInst(force, metadata=bearer(token)))
                assert error is None and seen[-1] == ("Deleted", 0)
                first, _ = await asyncio.wait_for(call, TIMEOUT)
                assert first[-1] == ("Deleted", 0)
                assert await api.show("clusterinst") == []
                refs = await api.cloudlet_refs()
                assert refs.get("used_ram", "0") == "0"

    run(scenario())


async def _state_is(api: Rest, state: str) -> bool:
    shown = await api.show("clusterinst")
    return bool(shown) and shown[0]["state"] == state


def test_not_found_names_the_missing_reference_and_inject_refuses_unknown_cloudlets(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            token = api.token
            await build_world(api)
            # REST: the detail names the type, key and the field that refers to it.
            missing_app = {**APP, "name": "nothing"}
            status, error = await api.post(
                "/create/appinst",
                {"key": {"app_key": missing_app, "cluster_inst_key": CLUSTER_INST}},
            )
            assert (status, error["code"]) == (404, 5)
            [detail] = error["details"]
            assert detail["@type"] == "type.googleapis.com/google.rpc.ResourceInfo"
            assert detail["resource_type"] == "edgeproto.App"
            assert '"name":"nothing"' in detail["resource_name"]
            assert detail["description"].startswith("key.app_key: App ")
            # gRPC: the same detail.
            stub = clusterinst_pb2_grpc.ClusterInstApiStub(server.channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in stub.DeleteClusterInst(_cluster_inst(), metadata=bearer(token)):
                    pass
            assert caught.value.code() is grpc.StatusCode.NOT_FOUND
            status_ = rpc_status.from_call(caught.value)
            assert status_ is not None
            info = error_details_pb2.ResourceInfo()
            assert status_.details[0].Unpack(info)
            assert info.resource_type == "edgeproto.ClusterInst"
            # InjectCloudletInfo refuses a cloudlet that does not exist, and stores nothing.
            nowhere = {"operator_key": OPERATOR, "name": "nowhere"}
            status, error = await api.post(
                "/v1/edge/cloudletinfo:inject", {"key": nowhere, "state": "CLOUDLET_STATE_READY"}
            )
            assert (status, error["code"]) == (404, 5), error
            assert error["details"][0]["resource_type"] == "edgeproto.Cloudlet"
            infos = cloudlet_pb2_grpc.CloudletInfoApiStub(server.channel)
            injected = cloudlet_pb2.CloudletInfo(state=cloudlet_pb2.CLOUDLET_STATE_READY)
            injected.key.operator_key.name = OPERATOR["name"]
            injected.key.name = "nowhere"
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await infos.InjectCloudletInfo(injected, metadata=bearer(token))
            assert caught.value.code() is grpc.StatusCode.NOT_FOUND
            status_ = rpc_status.from_call(caught.value)
            assert status_ is not None and status_.details[0].Unpack(info)
            assert info.resource_type == "edgeproto.Cloudlet"
            assert [i["key"]["name"] for i in await api.show("cloudletinfo")] == [CLOUDLET["name"]]

    run(scenario())


def test_ignore_crm_completes_without_asking_the_crm(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_failure_ratio=1.0) as server:
            api = await rest_api(server)
            token = api.token
            await _failed_cloudlet_brought_up(api)
            stub = clusterinst_pb2_grpc.ClusterInstApiStub(server.channel)
            # Every CRM operation would fail here; IGNORE_CRM does not ask it at all.
            inst = _cluster_inst(crm_override=common_pb2.IGNORE_CRM)
            seen, error = await _messages(stub.CreateClusterInst(inst, metadata=bearer(token)))
            assert (seen, error) == ([("Ready", 0)], None)
            [shown] = await api.show("clusterinst")
            assert shown["state"] == "READY"
            seen, error = await _messages(stub.DeleteClusterInst(inst, metadata=bearer(token)))
            assert (seen, error) == ([("Deleted", 0)], None)
            assert await api.show("clusterinst") == []

    run(scenario())


def test_failed_updates_and_deletes_show_their_error_states_and_app_insts_fail_too(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, sim_failure_ratio=1.0) as server:
            api = await rest_api(server)
            await _failed_cloudlet_brought_up(api)
            key = {"key": CLUSTER_INST}
            ignore = {**key, "crm_override": "IGNORE_CRM_ERRORS"}
            assert (await api.progress("/create/clusterinst", ignore))[-1] == "Ready"

            async def failing(path: str, body: dict) -> str:
                """The failure a progress stream ends in, after the steps before it."""
                status, lines = await api.post(path, body)
                assert status == 200
                *steps, failed, error = lines
                assert len(steps) > 1 and failed["result"]["code"] == 2, lines
                assert error["error"] == {
                    "code": 2,
                    "message": failed["result"]["message"],
                    "details": [],
                }
                return failed["result"]["message"]

            # REST: an update that fails leaves UPDATE_ERROR with the reason.
            update = {**key, "num_nodes": 2, "fields": ["num_nodes"]}
            message = await failing("/update/clusterinst", update)
            assert message.startswith("Update ClusterInst failed: Heat stack update failed")
            [inst] = await api.show("clusterinst")
            assert inst["state"] == "UPDATE_ERROR"
            assert [f"Update ClusterInst failed: {e}" for e in inst["errors"]] == [message]

            # gRPC: an AppInst create fails at its last step with AppInst's own reason, and
            # what a failed create left is deleted at once.
            await api.ok("/create/app", {"key": APP, "default_flavor": {"name": "x1.small"}})
            stub = app_inst_pb2_grpc.AppInstApiStub(server.channel)
            inst_key = json_format.ParseDict({"key": APP_INST}, app_inst_pb2.AppInst())
            seen, error = await _messages(stub.CreateAppInst(inst_key, metadata=bearer(api.token)))
            assert error is not None and error.code() is grpc.StatusCode.UNKNOWN
            assert seen[0] == ("Create requested", 0) and seen[-1][1] == 2
            assert seen[-1][0].startswith("Create AppInst failed: ")
            assert "(simulated fault)" in seen[-1][0]
            [app_inst] = await api.show("appinst")
            assert app_inst["state"] == "CREATE_ERROR" and app_inst["errors"]
            seen, error = await _messages(stub.DeleteAppInst(inst_key, metadata=bearer(api.token)))
            assert (seen, error) == ([("Deleted", 0)], None)

            # A delete that fails leaves DELETE_ERROR and everything still held ...
            message = await failing("/delete/clusterinst", key)
            assert message.startswith("Delete ClusterInst failed: ")
            [inst] = await api.show("clusterinst")
            assert inst["state"] == "DELETE_ERROR"
            assert (await api.cloudlet_refs())["used_ram"] != "0"
            # ... until a delete goes through, giving it back.
            assert (await api.progress("/delete/clusterinst", ignore))[-1] == "Deleted"
            assert await api.show("clusterinst") == []
            assert (await api.cloudlet_refs()).get("used_ram", "0") == "0"

    run(scenario())


def test_simulated_faults_are_a_seeded_share_of_the_operations():
    def failing(faults: Faults) -> set[str]:
        progresses = [
            Progress(kind, f'{{"name":"n{i}"}}', action, common_pb2.CREATE_REQUESTED, 0, salt=i)
            for i in range(200)
            for kind in ("Cloudlet", "ClusterInst", "AppInst")
            for action in ("create", "update", "delete")
        ]
        failed = {p.record_key + p.action: faults.reason(p) for p in progresses}
        for progress in progresses:
            reason = failed[progress.record_key + progress.action]
            if reason is not None:  # each kind and action fails for reasons of its own
                causes = FAULTS[(progress.type_name, progress.action)]
                assert reason.removesuffix(" (simulated fault)") in causes
        return {subject for subject, reason in failed.items() if reason is not None}

    half = failing(Faults(FaultInjection(0.5, seed=1)))
    assert 0.4 < len(half) / 1800 < 0.6
    assert failing(Faults(FaultInjection(0.5, seed=1))) == half  # the seed decides
    assert failing(Faults(FaultInjection(0.5, seed=2))) != half
    assert failing(Faults(FaultInjection(0.0, seed=1))) == set()
    assert len(failing(Faults(FaultInjection(1.0, seed=1)))) == 1800


class WebSocketCrm:
    """An external CRM for berlin-1 on the Notify WebSocket (the REST side), in JSON."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket

    async def hello(self) -> None:
        me = {"key": {"name": "crm-ws", "node_type": "NODE_CRM", "cloudlet_key": CLOUDLET}}
        hello = {"action": "VERSION", "version": 1, "filter_cloudlet_key": True}
        await self.socket.send(json.dumps({**hello, "any": {"@type": f"{ANY}Node", **me}}))
        while (await self._next())["action"] != "SENDALL_END":
            pass

    async def _next(self) -> dict:
        return json.loads(await asyncio.wait_for(self.socket.recv(), TIMEOUT))["result"]

    async def asked(self, type_name: str, state: str | None = None) -> dict:
        """The next object of ``type_name`` (in ``state``) the controller sends."""
        while True:
            obj = (await self._next()).get("any", {})
            if obj.get("@type") == f"{ANY}{type_name}" and state in (None, obj.get("state")):
                return obj

    async def report(self, type_name: str, key: dict, **fields: Any) -> None:
        info = {"@type": f"{ANY}{type_name}", "key": key, **fields}
        await self.socket.send(json.dumps({"action": "UPDATE", "any": info}))


ANY = "type.googleapis.com/edgeproto."


def test_an_external_crm_on_the_websocket_drives_cloudlets_and_app_insts(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await _parents(api)
            await api.ok("/create/app", {"key": APP, "default_flavor": {"name": "x1.small"}})
            async with notify_socket(server, api.token) as socket:
                crm = WebSocketCrm(socket)
                await crm.hello()
                # The Cloudlet is built when its CRM's CloudletInfo says READY, with what it has.
                create = asyncio.ensure_future(api.progress("/create/cloudlet", {"key": CLOUDLET}))
                await crm.asked("Cloudlet")
                await crm.report(
                    "CloudletInfo",
                    CLOUDLET,
                    state="CLOUDLET_STATE_READY",
                    os_max_ram=2048,
                    os_max_vcores=4,
                    os_max_vol_gb=100,
                )
                assert await asyncio.wait_for(create, TIMEOUT) == ["Create requested", "Ready"]
                [info] = await api.show("cloudletinfo")
                assert (info["state"], info["os_max_ram"]) == ("CLOUDLET_STATE_READY", "2048")
                # What the CRM reported is the cloudlet's capacity: 3 nodes of 1 GB do not fit.
                status, error = await api.post(
                    "/create/clusterinst", {"key": CLUSTER_INST, "num_nodes": 3}
                )
                assert (status, error["code"]) == (429, 8), error
                create = asyncio.ensure_future(
                    api.progress("/create/clusterinst", {"key": CLUSTER_INST})
                )
                asked = await crm.asked("ClusterInst", "CREATE_REQUESTED")
                await crm.report("ClusterInstInfo", asked["key"], state="READY")
                assert (await asyncio.wait_for(create, TIMEOUT))[-1] == "Ready"
                # An AppInst: the CRM's working state shows as progress, then READY ends it.
                create = asyncio.ensure_future(api.progress("/create/appinst", {"key": APP_INST}))
                asked = await crm.asked("AppInst", "CREATE_REQUESTED")
                await crm.report("AppInstInfo", asked["key"], state="CREATING")
                await crm.asked("AppInst", "CREATING")
                await crm.report(
                    "AppInstInfo",
                    asked["key"],
                    state="READY",
                    runtime_info={"container_ids": ["pokemon-abc12"]},
                )
                messages = await asyncio.wait_for(create, TIMEOUT)
                assert messages == ["Create requested", "Creating", "Ready"]
                [inst] = await api.show("appinst")
                assert inst["state"] == "READY"
                assert inst["runtime_info"]["container_ids"] == ["pokemon-abc12"]
                # A report with nothing in flight (the CRM saw the app fail) shows on the object.
                await crm.report(
                    "AppInstInfo", asked["key"], state="CREATE_ERROR", errors=["OOMKilled"]
                )

                async def app_inst_failed() -> bool:
                    [shown] = await api.show("appinst")
                    return (shown["state"], shown.get("errors")) == ("CREATE_ERROR", ["OOMKilled"])

                await eventually(app_inst_failed, timeout=TIMEOUT)
                await socket.send("")

    run(scenario())


def test_ignore_transient_state_acts_on_a_busy_object_and_still_asks_the_crm(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            token = api.token
            await build_world(api)
            async with Crm.synced(server, token) as crm:
                stub = clusterinst_pb2_grpc.ClusterInstApiStub(server.channel)
                create = asyncio.ensure_future(
                    _messages(stub.CreateClusterInst(_cluster_inst(), metadata=bearer(token)))
                )
                await crm.next_cluster_inst(common_pb2.CREATE_REQUESTED)  # never answered
                seen, error = await _messages(
                    stub.DeleteClusterInst(_cluster_inst(), metadata=bearer(token))
                )
                assert error is not None and error.code() is grpc.StatusCode.FAILED_PRECONDITION
                assert "CREATE_REQUESTED" in error.details()
                # IGNORE_TRANSIENT_STATE lets the delete start; the CRM still carries it out.
                busy = _cluster_inst(crm_override=common_pb2.IGNORE_TRANSIENT_STATE)
                delete = asyncio.ensure_future(
                    _messages(stub.DeleteClusterInst(busy, metadata=bearer(token)))
                )
                asked = await crm.next_cluster_inst(common_pb2.DELETE_REQUESTED)
                assert [i["state"] for i in await api.show("clusterinst")] == ["DELETE_REQUESTED"]
                crm.report(asked.key, common_pb2.NOT_PRESENT)
                seen, error = await asyncio.wait_for(delete, TIMEOUT)
                assert (seen, error) == ([("Delete requested", 0), ("Deleted", 0)], None)
                # The abandoned create's stream ends as the controller ended it: aborted, not OK.
                seen, error = await asyncio.wait_for(create, TIMEOUT)
                assert error is not None and error.code() is grpc.StatusCode.ABORTED
                aborted = "Create ClusterInst aborted: delete requested while it was in progress"
                assert error.details() == aborted
                assert seen[-1] == (aborted, grpc.StatusCode.ABORTED.value[0])
                assert await api.show("clusterinst") == []

    run(scenario())
