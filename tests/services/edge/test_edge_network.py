"""Edge networking: root load-balancer ports, dedicated IPs (dynamic and static), release."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import json_format

import app.services.edge.kinds as k
from app.services.edge.network import PUBLIC_PORTS, free_public_port
from app.services.edge.records import load, put
from gen.distributed_match_engine import appcommon_pb2
from gen.edgeproto import app_inst_pb2, app_inst_pb2_grpc, cloudlet_pb2, refs_pb2, refs_pb2_grpc
from tests.harness import run, running
from tests.services.edge.world import (
    APP,
    CLOUDLET,
    CLUSTER_INST,
    DEVELOPER,
    OPERATOR,
    Rest,
    bearer,
    rest_api,
)

FLAVOR = {"name": "x1.small"}
PORTS = "tcp:443,udp:10002,http:8080"


async def _world(api: Rest) -> None:
    await api.ok("/create/operator", {"key": OPERATOR})
    await api.ok("/create/developer", {"key": DEVELOPER})
    await api.ok("/create/flavor", {"key": FLAVOR, "ram": 1024, "vcpus": 1, "disk": 10})
    await api.progress(
        "/create/cloudlet",
        {"key": CLOUDLET, "ip_support": "IP_SUPPORT_DYNAMIC", "num_dynamic_ips": 1},
    )
    for name in ("games", "solo", "spare"):
        await api.ok("/create/cluster", {"key": {"name": name}, "default_flavor": FLAVOR})
    for name in ("pokemon", "ingress"):
        app = {**APP, "name": name}
        await api.ok("/create/app", {"key": app, "default_flavor": FLAVOR, "access_ports": PORTS})
    await api.progress("/create/clusterinst", {"key": CLUSTER_INST, "num_nodes": 2})


def _inst(name: str) -> dict:
    return {**CLUSTER_INST, "cluster_key": {"name": name}}


def test_shared_access_app_insts_get_distinct_root_lb_ports_released_on_delete(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await _world(api)
            keys = [
                {"app_key": {**APP, "name": n}, "cluster_inst_key": CLUSTER_INST}
                for n in ("pokemon", "ingress")
            ]
            for key in keys:
                await api.progress("/create/appinst", {"key": key})
            shown = {i["key"]["app_key"]["name"]: i for i in await api.show("appinst")}
            first = [
                (p["proto"], p["internal_port"], p["public_port"])
                for p in shown["pokemon"]["mapped_ports"]
            ]
            second = [
                (p["proto"], p["internal_port"], p["public_port"])
                for p in shown["ingress"]["mapped_ports"]
            ]
            # The same number when free; 443/tcp is the load balancer's own (L7), so it moves.
            assert first == [
                ("L_PROTO_TCP", 443, 10000),
                ("L_PROTO_UDP", 10002, 10002),
                ("L_PROTO_HTTP", 8080, 443),
            ]
            assert second == [
                ("L_PROTO_TCP", 443, 10001),
                ("L_PROTO_UDP", 10002, 10000),
                ("L_PROTO_HTTP", 8080, 443),
            ]
            paths = {shown[n]["mapped_ports"][2]["path_prefix"] for n in shown}
            assert paths == {"/games-niantic/pokemon-1-0/p8080", "/games-niantic/ingress-1-0/p8080"}
            assert shown["pokemon"]["uri"] == "berlin-1.acme-telecom.edge.portico.test"
            # CloudletRefs keeps each public port with its protocol bits (tcp 1, udp 2); gRPC.
            token = api.token
            stub = refs_pb2_grpc.CloudletRefsApiStub(server.channel)
            [refs] = [
                r
                async for r in stub.ShowCloudletRefs(
                    refs_pb2.CloudletRefs(), metadata=bearer(token)
                )
            ]
            assert dict(refs.root_lb_ports) == {10000: 3, 10001: 1, 10002: 2}
            # Deletes give the ports back.
            for key in keys:
                await api.progress("/delete/appinst", {"key": key})
            assert (await api.cloudlet_refs(CLOUDLET)).get("root_lb_ports", {}) == {}

    run(scenario())


def test_dedicated_access_takes_dynamic_ips_until_exhausted_and_gives_them_back(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await _world(api)
            solo = {"key": _inst("solo"), "ip_access": "IP_ACCESS_DEDICATED"}
            await api.progress("/create/clusterinst", solo)
            [inst] = [
                i
                for i in await api.show("clusterinst")
                if i["key"]["cluster_key"]["name"] == "solo"
            ]
            # DHCP hands out the address, so the controller records only that it took one.
            assert (inst["ip_access"], inst["allocated_ip"]) == ("IP_ACCESS_DEDICATED", "dynamic")
            assert (await api.cloudlet_refs(CLOUDLET))["used_dynamic_ips"] == 1
            # num_dynamic_ips is 1: another dedicated ClusterInst is refused and nothing is kept.
            status, error = await api.post(
                "/create/clusterinst", {"key": _inst("spare"), "ip_access": "IP_ACCESS_DEDICATED"}
            )
            assert (status, error["code"]) == (429, 8), error
            assert "1 of 1 dynamic IPs" in error["message"]
            assert len(await api.show("clusterinst")) == 2
            # ip_access is settled at create: an update may not change it.
            status, error = await api.post(
                "/update/clusterinst",
                {"key": _inst("solo"), "ip_access": "IP_ACCESS_SHARED", "fields": ["ip_access"]},
            )
            assert (status, error["code"]) == (400, 3), error
            assert error["details"][0]["field_violations"][0]["field"] == "fields[0]"
            # DEDICATED_OR_SHARED falls back to shared.
            await api.progress(
                "/create/clusterinst",
                {"key": _inst("spare"), "ip_access": "IP_ACCESS_DEDICATED_OR_SHARED"},
            )
            [spare] = [
                i
                for i in await api.show("clusterinst")
                if i["key"]["cluster_key"]["name"] == "spare"
            ]
            assert spare["ip_access"] == "IP_ACCESS_SHARED"
            # An AppInst on a dedicated ClusterInst keeps its ports and takes no root LB port.
            key = {"app_key": APP, "cluster_inst_key": _inst("solo")}
            await api.progress("/create/appinst", {"key": key})
            [app_inst] = await api.show("appinst")
            assert [p["public_port"] for p in app_inst["mapped_ports"]] == [443, 10002, 8080]
            assert app_inst["uri"] == "solo.berlin-1.acme-telecom.edge.portico.test"
            assert (await api.cloudlet_refs(CLOUDLET)).get("root_lb_ports", {}) == {}
            # The cloudlet cannot drop below the addresses in use.
            status, error = await api.post(
                "/update/cloudlet",
                {"key": CLOUDLET, "num_dynamic_ips": 0, "fields": ["num_dynamic_ips"]},
            )
            assert (status, error["code"]) == (400, 9), error
            await api.progress("/delete/appinst", {"key": key})
            await api.progress("/delete/clusterinst", {"key": _inst("solo")})
            assert (await api.cloudlet_refs(CLOUDLET)).get("used_dynamic_ips", 0) == 0

    run(scenario())


def test_static_ip_support_hands_out_the_listed_addresses(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await _world(api)
            static = {"operator_key": OPERATOR, "name": "paris-1"}
            status, error = await api.post(
                "/create/cloudlet",
                {"key": static, "ip_support": "IP_SUPPORT_STATIC", "static_ips": "192.0.2.10,nope"},
            )
            assert (status, error["code"]) == (400, 3)
            assert error["details"][0]["field_violations"][0]["field"] == "static_ips"
            await api.progress(
                "/create/cloudlet",
                {
                    "key": static,
                    "ip_support": "IP_SUPPORT_STATIC",
                    "static_ips": "192.0.2.10,192.0.2.11",
                },
            )
            key = {**CLUSTER_INST, "cloudlet_key": static, "cluster_key": {"name": "solo"}}
            await api.progress(
                "/create/clusterinst", {"key": key, "ip_access": "IP_ACCESS_DEDICATED"}
            )
            [inst] = [
                i
                for i in await api.show("clusterinst")
                if i["key"]["cloudlet_key"]["name"] == "paris-1"
            ]
            assert inst["allocated_ip"] == "192.0.2.10"
            assert (await api.cloudlet_refs(static))["used_static_ips"] == "192.0.2.10"
            # The next takes the next address; with none left, RESOURCE_EXHAUSTED.
            spare = {**key, "cluster_key": {"name": "spare"}}
            await api.progress(
                "/create/clusterinst", {"key": spare, "ip_access": "IP_ACCESS_DEDICATED"}
            )
            refs = await api.cloudlet_refs(static)
            assert refs["used_static_ips"] == "192.0.2.10,192.0.2.11"
            games = {**key, "cluster_key": {"name": "games"}}
            status, error = await api.post(
                "/create/clusterinst", {"key": games, "ip_access": "IP_ACCESS_DEDICATED"}
            )
            assert (status, error["code"]) == (429, 8), error
            assert "2 of 2 static IPs used" in error["message"]
            await api.progress("/delete/clusterinst", {"key": spare})
            status, error = await api.post(
                "/update/cloudlet",
                {"key": static, "static_ips": "192.0.2.11", "fields": ["static_ips"]},
            )
            assert (status, error["code"]) == (400, 9) and "192.0.2.10" in error["message"]
            await api.progress("/delete/clusterinst", {"key": key})
            assert (await api.cloudlet_refs(static)).get("used_static_ips", "") == ""

    run(scenario())


def test_root_lb_ports_run_out_as_resource_exhausted():
    tcp, udp = appcommon_pb2.L_PROTO_TCP, appcommon_pb2.L_PROTO_UDP
    ports = range(10000, 10002)
    used = {10000: 1}
    assert free_public_port(used, tcp, 80, ports) == 80
    assert free_public_port(used, tcp, 10000, ports) == 10001
    assert free_public_port(used, udp, 10000, ports) == 10000
    assert free_public_port({10000: 1, 10001: 1}, tcp, 10000, ports) is None


def test_root_lb_ports_running_out_is_resource_exhausted_on_both_transports(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            api = await rest_api(server)
            await _world(api)
            # Every public port of the root load balancer taken, for tcp and udp, but 12345.
            store = server.portico.store
            assert store is not None
            cloudlet_key = json_format.ParseDict(CLOUDLET, cloudlet_pb2.CloudletKey())
            async with store.transaction() as tx:
                refs = await load(tx, k.CLOUDLET_REFS, cloudlet_key)
                refs.root_lb_ports.update({port: 3 for port in PUBLIC_PORTS if port != 12345})
                refs.root_lb_ports[12345] = 1
                await put(tx, k.CLOUDLET_REFS, refs)
            key = {"app_key": APP, "cluster_inst_key": CLUSTER_INST}
            # REST: 443/tcp (the load balancer's own) needs a port of the range: none is free.
            status, error = await api.post("/create/appinst", {"key": key})
            assert (status, error["code"]) == (429, 8), error
            assert "no free tcp port left on the root load balancer" in error["message"]
            assert await api.show("appinst") == []
            # gRPC: the same; its udp port would have found 12345, but nothing is kept.
            stub = app_inst_pb2_grpc.AppInstApiStub(server.channel)
            request = json_format.ParseDict({"key": key}, app_inst_pb2.AppInst())
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in stub.CreateAppInst(request, metadata=bearer(api.token)):
                    pass
            assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert (await api.cloudlet_refs(CLOUDLET))["root_lb_ports"]["12345"] == 1
            # A port given back is taken again: the udp one finds 12345 free for udp.
            async with store.transaction() as tx:
                refs = await load(tx, k.CLOUDLET_REFS, cloudlet_key)
                refs.root_lb_ports[20000] = 2
                await put(tx, k.CLOUDLET_REFS, refs)
            await api.progress("/create/appinst", {"key": key})
            [inst] = await api.show("appinst")
            ports = [(p["proto"], p["public_port"]) for p in inst["mapped_ports"]]
            assert ports == [("L_PROTO_TCP", 20000), ("L_PROTO_UDP", 12345), ("L_PROTO_HTTP", 443)]
            used = (await api.cloudlet_refs(CLOUDLET))["root_lb_ports"]
            assert (used["20000"], used["12345"]) == (3, 3)

    run(scenario())
