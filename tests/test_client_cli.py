"""``portico login`` and ``portico call`` against a running server, over gRPC and REST."""

from __future__ import annotations

import asyncio
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.commands import main
from tests.harness import ADMIN_PASSWORD, Running, run, running, uvicorn_serving

ROOT = Path(__file__).resolve().parent.parent


async def portico(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    """``portico ARGV`` in this process (off the event loop): exit status, stdout, stderr."""

    def command() -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        saved = sys.stdin, sys.stdout, sys.stderr
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin), out, err
        try:
            main(list(argv))
            status = 0
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
            if isinstance(exc.code, str):
                err.write(exc.code)
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
        return status, out.getvalue(), err.getvalue()

    return await asyncio.to_thread(command)


def addresses(served: Running, rest: str, transport: str) -> list[str]:
    return [
        "--transport",
        transport,
        "--grpc",
        f"127.0.0.1:{served.portico.grpc_port}",
        "--rest",
        f"http://{rest}",
    ]


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_login_keeps_the_token_and_call_uses_it(
    tmp_path: Path, login_file: Path, transport: str
) -> None:

    async def check() -> None:
        async with (
            running(tmp_path / "data") as served,
            uvicorn_serving(served.portico.http_app) as rest,
        ):
            where = addresses(served, rest, transport)
            # Without a login, the gate refuses: the Status is printed, then what to do.
            status, out, err = await portico("call", "cnct.kaas.api.Cluster/GetClusterList", *where)
            refusal, end = json.JSONDecoder().raw_decode(err)
            assert (status, out, refusal["code"]) == (1, "", 16)
            assert "run `portico login -u USERNAME` first" in err[end:]

            status, out, err = await portico(
                "login", "-u", "admin", "--password-stdin", *where, stdin=ADMIN_PASSWORD + "\n"
            )
            assert status == 0, err
            assert stat.S_IMODE(login_file.stat().st_mode) == 0o600
            saved = json.loads(login_file.read_text())
            assert saved["transport"] == transport and saved["token"].count(".") == 2

            # The login's transport and addresses are kept: no flags needed from now on.
            created = {
                "name": "cli",
                "k8s_version": "1.31.2",
                "control_plane_nodes": {"count": 1, "instanceType": "standard"},
                "worker_node_pools": [{"name": "w", "instanceType": "standard", "count": 1}],
            }
            status, out, err = await portico(
                "call", "cnct.kaas.api.Cluster.CreateCluster", json.dumps(created)
            )
            assert status == 0, err
            assert json.loads(out)["ok"] is True
            status, out, err = await portico(
                "call", "cnct.kaas.api.Cluster/GetCluster", '{"name": "cli"}'
            )
            assert json.loads(out)["cluster"]["name"] == "cli"

            status, out, err = await portico(
                "call", "cnct.kaas.api.Cluster/GetCluster", '{"name": "nope"}'
            )
            assert status == 1 and out == ""
            assert json.loads(err) | {"details": []} == {
                "code": 5,
                "message": "cluster 'nope' not found",
                "details": [],
            }

            # Refused before sending: an unknown field, a second request for a unary method.
            status, _, err = await portico(
                "call", "cnct.kaas.api.Cluster/GetCluster", '{"nam": "x"}'
            )
            assert status == 1 and "nam" in err
            status, _, err = await portico("call", "cnct.kaas.api.Cluster/GetCluster", "{} {}")
            assert status == 1 and "takes one request, not 2" in err
            status, _, err = await portico("call", "cnct.kaas.api.Cluster/Nope")
            assert status == 1 and "no method" in err

            # A finite server stream: one JSON document per reply.
            status, out, err = await portico(
                "call", "edgeproto.FlavorApi/ShowFlavor", "--compact", "-H", "x-request-id: cli-1"
            )
            assert status == 0, err
            assert all(json.loads(line) for line in out.splitlines())

    run(check())


def test_a_follow_stream_prints_each_reply_as_it_arrives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def check() -> None:
        async with running(tmp_path / "data", demo=True) as served:
            token = await served.login()
            env = {
                **os.environ,
                "PORTICO_TOKEN": token,
                "PORTICO_LOGIN_FILE": str(tmp_path / "none"),
            }
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "app",
                "call",
                "v1alpha.PublicAPI/ListenEvents",
                '{"filter": {"since_time": "1"}}',
                "--compact",
                "--grpc",
                f"127.0.0.1:{served.portico.grpc_port}",
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            try:
                # ListenEvents never ends by itself: a reply printed now was printed on arrival.
                line = await asyncio.wait_for(process.stdout.readline(), timeout=30)  # type: ignore[union-attr]
                assert json.loads(line)["events"], line
                assert process.returncode is None
            finally:
                process.terminate()
                await process.wait()

    run(check())


def test_without_flags_or_a_login_the_client_finds_the_server_on_the_ports_the_shell_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quick start's server on other ports (PORTICO_GRPC_PORT / PORTICO_HTTP_PORT exported
    for `portico serve`) is where `portico login` goes, not 127.0.0.1:50051."""
    monkeypatch.setenv("PORTICO_LOGIN_FILE", str(tmp_path / "login.json"))
    monkeypatch.delenv("PORTICO_TOKEN", raising=False)

    async def check() -> None:
        async with (
            running(tmp_path / "data") as served,
            uvicorn_serving(served.portico.http_app) as rest,
        ):
            monkeypatch.setenv("PORTICO_GRPC_PORT", str(served.portico.grpc_port))
            monkeypatch.setenv("PORTICO_HTTP_PORT", rest.rsplit(":", 1)[1])
            status, _, err = await portico(
                "login", "-u", "admin", "--password-stdin", stdin=ADMIN_PASSWORD + "\n"
            )
            assert status == 0, err
            status, out, err = await portico(
                "call", "--transport", "rest", "cnct.kaas.api.Cluster/GetClusterList"
            )
            assert status == 0, err
            assert json.loads(out)["ok"] is True

    run(check())
