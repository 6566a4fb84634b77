"""``portico list`` and ``portico describe`` from the server's reflection, as grpcurl's list and
describe, and ``portico call`` of a method that is none of Portico's own (a plain grpcio
server's, as one behind ``portico proxy``) through the same reflection."""

from __future__ import annotations

import json
from pathlib import Path

from tests.harness import run, running
from tests.proxy.processes import SERVICE, free_port, python_gen, start_python_echo
from tests.test_client_cli import portico


def test_list_and_describe_say_what_portico_serves(tmp_path: Path) -> None:
    async def check() -> None:
        async with running(tmp_path / "data") as served:
            where = ["--grpc", f"127.0.0.1:{served.portico.grpc_port}"]
            status, out, err = await portico("list", *where)
            assert status == 0, err
            services = out.split()
            assert "cnct.kaas.api.Cluster" in services and "v1alpha.PublicAPI" in services
            assert services == sorted(services)

            status, out, err = await portico("list", "cnct.kaas.api.Cluster", *where)
            assert status == 0, err
            assert "cnct.kaas.api.Cluster.GetCluster" in out.split()

            status, out, err = await portico("describe", "cnct.kaas.api.Cluster.GetCluster", *where)
            assert status == 0, err
            assert out.startswith("cnct.kaas.api.Cluster.GetCluster is a method:\n")
            # The comment of the .proto (Portico's own descriptor set), and its REST route.
            assert "// Will retrieve the status of a cluster" in out
            rpc = "rpc GetCluster(cnct.kaas.api.GetClusterMsg) returns "
            assert rpc + "(cnct.kaas.api.GetClusterReply);" in out
            assert "// REST: GET /api/v1/cluster" in out

            status, out, err = await portico("describe", "cnct.kaas.api.GetClusterMsg", *where)
            assert "message GetClusterMsg {" in out and "  string name = 1;" in out

            status, out, err = await portico("describe", "v1alpha.PublicAPI", *where)
            assert "rpc ListenEvents(v1alpha.ListenEventsRequest) returns (stream " in out

            status, out, err = await portico("list", "cnct.kaas.api.Clustr", *where)
            assert (status, out) == (1, "")
            assert err.endswith("did you mean cnct.kaas.api.Cluster?")

    run(check())


def test_call_list_and_describe_a_server_portico_did_not_write(tmp_path: Path) -> None:
    port = free_port()
    echo = start_python_echo(python_gen(tmp_path / "echo"), port)
    where = ["--grpc", f"127.0.0.1:{port}"]

    async def check() -> None:
        status, out, err = await portico("list", *where)
        assert (status, out.split()) == (
            0,
            sorted([SERVICE, "grpc.reflection.v1alpha.ServerReflection"]),
        )
        status, out, err = await portico("describe", f"{SERVICE}.Say", *where)
        assert status == 0, err
        # grpcio's reflection carries no comments: the method, without its own.
        assert out.splitlines()[1:3] == [
            "rpc Say(portico.echo.v1.SayRequest) returns (portico.echo.v1.SayReply);",
            "  // REST: GET /v1/say/{text}",
        ]
        status, out, err = await portico("call", f"{SERVICE}/Say", '{"text": "hi"}', *where)
        assert status == 0, err
        assert json.loads(out)["text"] == "hi"
        status, out, err = await portico("call", f"{SERVICE}/Sya", *where)
        assert (status, out) == (1, "")
        assert err == f"portico: {SERVICE} has no method 'Sya'; did you mean {SERVICE}/Say?"

    try:
        run(check())
    finally:
        echo.stop()
