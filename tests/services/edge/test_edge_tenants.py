"""Tenants: accounts bound to a developer or operator organisation, on REST and gRPC alike."""

from __future__ import annotations

import io

import grpc
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from app.cli.commands import main
from app.gateway.registry import Method, Registry
from gen.edgeproto import (
    app_inst_pb2,
    app_inst_pb2_grpc,
    clusterinst_pb2,
    clusterinst_pb2_grpc,
    common_pb2,
    exec_pb2,
    exec_pb2_grpc,
)
from tests.grpc_calls import grpc_call
from tests.harness import ADMIN_PASSWORD, Running, run, running
from tests.services.edge.world import (
    APP,
    APP_INST,
    CLOUDLET,
    CLUSTER_INST,
    OPERATOR,
    Rest,
    bearer,
    build_world,
    rest_api,
)

ACME = {"name": "AcmeApps"}
ROCKET = {"developer_key": ACME, "name": "rocket", "version": "2.0"}
ACME_CLUSTER = {**CLUSTER_INST, "cluster_key": {"name": "acme"}, "developer": "AcmeApps"}
ACME_INST = {"app_key": ROCKET, "cluster_inst_key": ACME_CLUSTER}


async def _two_developers(api: Rest) -> None:
    """Niantic's world plus AcmeApps with its own app, cluster instance and app instance."""
    await build_world(api)
    await api.progress("/create/clusterinst", {"key": CLUSTER_INST})
    await api.progress("/create/appinst", {"key": APP_INST})
    await api.ok("/create/developer", {"key": ACME})
    await api.ok("/create/app", {"key": ROCKET, "default_flavor": {"name": "x1.small"}})
    await api.ok(
        "/create/cluster", {"key": {"name": "acme"}, "default_flavor": {"name": "x1.small"}}
    )
    await api.progress("/create/clusterinst", {"key": ACME_CLUSTER})


DENIED = grpc.StatusCode.PERMISSION_DENIED
REGISTRY = Registry.from_package("gen")


def _method(path: str) -> Method:
    """The RPC an original REST route (``/delete/app``) calls."""
    [method] = [m for m in REGISTRY if any(b.path == path for b in m.http)]
    return method


async def _grpc_code(server: Running, token: str, path: str, body: dict) -> grpc.StatusCode:
    """How the RPC behind ``path`` ends on gRPC, called with ``body``."""
    method = _method(path)
    request = json_format.ParseDict(body, method.input_type())
    return await grpc_call(server.channel, method, token, request)


async def _grpc_show(server: Running, token: str, path: str) -> list[Message]:
    """Everything the Show RPC behind ``path`` streams on gRPC for an empty request."""
    method = _method(path)
    call = server.channel.unary_stream(
        method.grpc_path,
        request_serializer=method.input_type.SerializeToString,
        response_deserializer=method.output_type.FromString,
    )
    return [found async for found in call(method.input_type(), metadata=bearer(token))]


def _developers(shown: list[dict], path: tuple[str, ...]) -> set[str]:
    found = set()
    for obj in shown:
        value = obj["key"]
        for part in path:
            value = value[part]
        found.add(value)
    return found


def test_a_developer_account_sees_and_changes_only_its_developers_objects(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            admin = await rest_api(server)
            await _two_developers(admin)
            token = await server.add_account("alice", "operator", developer="AcmeApps")
            alice = Rest(server, token)

            # Writes to its own developer's objects work ...
            assert (await alice.progress("/create/appinst", {"key": ACME_INST}))[-1] == "Ready"
            # ... Show filters to them, while cloudlets (where to deploy) stay visible.
            assert _developers(await alice.show("app"), ("developer_key", "name")) == {"AcmeApps"}
            assert _developers(await alice.show("clusterinst"), ("developer",)) == {"AcmeApps"}
            assert _developers(await alice.show("developer"), ("name",)) == {"AcmeApps"}
            shown = await alice.show("appinst")
            assert _developers(shown, ("app_key", "developer_key", "name")) == {"AcmeApps"}
            assert len(await alice.show("cloudlet")) == 1
            # ... Show filters the same on gRPC ...
            for path in ("/show/app", "/show/clusterinst", "/show/developer", "/show/appinst"):
                rest = [
                    json_format.ParseDict(o, _method(path).output_type())
                    for o in await alice.show(path.rsplit("/", 1)[1])
                ]
                assert await _grpc_show(server, token, path) == rest, path
            # ... and everyone else's are PERMISSION_DENIED on both transports, changing nothing.
            for path, body in (
                ("/delete/app", {"key": APP}),
                ("/update/app", {"key": APP, "command": "x", "fields": ["command"]}),
                ("/create/appinst", {"key": {**APP_INST, "cluster_inst_key": ACME_CLUSTER}}),
                ("/delete/appinst", {"key": APP_INST}),
                ("/delete/clusterinst", {"key": CLUSTER_INST}),
                ("/update/cloudlet", {"key": CLOUDLET, "num_dynamic_ips": 5, "fields": ["8"]}),
                ("/create/flavor", {"key": {"name": "mine"}, "ram": 1, "vcpus": 1}),
            ):
                status, error = await alice.post(path, body)
                assert (status, error["code"]) == (403, 7), (path, error)
                assert "acts for developer 'AcmeApps'" in error["message"]
                assert await _grpc_code(server, token, path, body) is DENIED, path
            assert len(await admin.show("appinst")) == 2
            # The same policy on gRPC: Show filters and writes are refused.
            stub = app_inst_pb2_grpc.AppInstApiStub(server.channel)
            seen = [
                i async for i in stub.ShowAppInst(app_inst_pb2.AppInst(), metadata=bearer(token))
            ]
            assert [i.key.app_key.name for i in seen] == ["rocket"]
            clusters = clusterinst_pb2_grpc.ClusterInstApiStub(server.channel)
            theirs = clusterinst_pb2.ClusterInst()
            theirs.key.cluster_key.name = "games"
            theirs.key.cloudlet_key.operator_key.name = OPERATOR["name"]
            theirs.key.cloudlet_key.name = CLOUDLET["name"]
            theirs.key.developer = "Niantic"
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in clusters.DeleteClusterInst(theirs, metadata=bearer(token)):
                    pass
            assert caught.value.code() is grpc.StatusCode.PERMISSION_DENIED
            execs = exec_pb2_grpc.ExecApiStub(server.channel)
            command = exec_pb2.ExecRequest(command="ls")
            command.app_inst_key.CopyFrom(seen[0].key)
            command.app_inst_key.app_key.developer_key.name = "Niantic"
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await execs.RunCommand(command, metadata=bearer(token))
            assert caught.value.code() is grpc.StatusCode.PERMISSION_DENIED
            # crm_override is an admin's tool, whatever the binding.
            mine = clusterinst_pb2.ClusterInst(crm_override=common_pb2.IGNORE_CRM)
            mine.key.CopyFrom(theirs.key)
            mine.key.developer = "AcmeApps"
            mine.key.cluster_key.name = "acme"
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in clusters.DeleteClusterInst(mine, metadata=bearer(token)):
                    pass
            assert caught.value.code() is grpc.StatusCode.PERMISSION_DENIED
            assert "crm_override" in (caught.value.details() or "")

    run(scenario())


def test_operator_accounts_manage_their_cloudlets_and_unbound_accounts_see_everything(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            admin = await rest_api(server)
            await _two_developers(admin)
            bob = Rest(server, await server.add_account("bob", "operator", operator="Acme Telecom"))
            carol = Rest(server, await server.add_account("carol", "operator"))
            # Bob runs Acme Telecom's cloudlets ...
            update = {"key": CLOUDLET, "num_dynamic_ips": 4, "fields": ["num_dynamic_ips"]}
            assert (await bob.progress("/update/cloudlet", update))[-1] == "Ready"
            other = {"operator_key": {"name": "T-Mobile"}, "name": "x"}
            status, error = await bob.post("/create/cloudlet", {"key": other})
            assert (status, error["code"]) == (403, 7), error
            assert await _grpc_code(server, bob.token, "/create/cloudlet", {"key": other}) is DENIED
            # ... sees what runs on them, read-only, and no developer's private definitions.
            assert len(await bob.show("clusterinst")) == 2
            assert await bob.show("app") == []
            status, error = await bob.post("/delete/appinst", {"key": APP_INST})
            assert (status, error["code"]) == (403, 7), error
            assert (
                await _grpc_code(server, bob.token, "/delete/appinst", {"key": APP_INST}) is DENIED
            )
            assert await _grpc_show(server, bob.token, "/show/app") == []
            # An account bound to nothing keeps the global view.
            assert len(await carol.show("app")) == 2
            assert len(await carol.show("appinst")) == 1

    run(scenario())


def test_users_add_binds_an_account_to_a_developer(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PORTICO_PASSWORD_HASH_COST", "16")

    def cli(*args: str, stdin: str = "") -> None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        # Not a terminal: the password is read from stdin only when asked to.
        piped = ["--password-stdin"] if stdin else []
        main(["users", "--data-dir", str(tmp_path), *args, *piped])

    # An account exists, so no bootstrap admin will be made: add one too.
    cli("add", "admin", "--role", "admin", stdin=f"{ADMIN_PASSWORD}\n")
    cli("add", "alice", "--role", "operator", "--developer", "AcmeApps", stdin="alice-pass\n")
    assert "added alice (operator, developer AcmeApps)" in capsys.readouterr().out
    cli("list")
    assert "alice\toperator\tenabled\tdeveloper AcmeApps" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli("add", "bob", "--role", "operator", "--developer", "A", "--operator", "B", stdin="x\n")
    # An empty name (an unset variable in a script) is refused, not an unbound account.
    for option in ("--developer", "--operator"):
        with pytest.raises(SystemExit):
            cli("add", "carol", "--role", "operator", option, "", stdin="carol-pass\n")
        assert "must name an organisation" in capsys.readouterr().err
    cli("list")
    assert "carol" not in capsys.readouterr().out

    async def scenario() -> None:
        async with running(tmp_path) as server:
            admin = await rest_api(server)
            await _two_developers(admin)
            alice = Rest(server, await server.login("alice", "alice-pass"))
            assert [a["key"]["name"] for a in await alice.show("app")] == ["rocket"]

    run(scenario())
