"""The client commands say what went wrong in one sentence, and what to do: a refused login, a
token that expired or that another server signed, an address that speaks no gRPC (a saved login
is never carried to another server by a fresh ``login``), a call that outlasts ``--timeout``;
``portico token`` gives scripts a token or fails with a sentence."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from app.cli.saved_login import login_file
from tests.harness import ADMIN_PASSWORD, Running, run, running, uvicorn_serving
from tests.test_client_cli import portico

VERSION = "cnct.kaas.api.Cluster/GetVersionInformation"


def _grpc(served: Running) -> str:
    return f"127.0.0.1:{served.portico.grpc_port}"


async def _log_in(*where: str, password: str = ADMIN_PASSWORD) -> tuple[int, str, str]:
    return await portico("login", "-u", "admin", "--password-stdin", *where, stdin=password + "\n")


def test_a_refused_login_is_one_sentence(tmp_path: Path) -> None:
    async def check() -> None:
        async with running(tmp_path / "data") as served:
            status, out, err = await _log_in("--grpc", _grpc(served), password="wrong-password")
            assert (status, out) == (1, "")
            assert err == "portico: login refused: invalid username or password"
            assert not login_file().exists()
            status, out, err = await portico(
                "token", "-u", "admin", "--password-stdin", "--grpc", _grpc(served),
                stdin="wrong-password\n",
            )  # fmt: skip
            assert (status, out, err) == (
                1,
                "",
                "portico: login refused: invalid username or password",
            )

    run(check())


def test_token_prints_a_token_for_scripts_or_fails_with_a_sentence(tmp_path: Path) -> None:
    async def check() -> None:
        async with running(tmp_path / "data") as served:
            status, out, err = await portico("token")
            assert (status, out) == (1, "")
            assert err.startswith("portico: there is no saved login: log in with `portico login")

            status, out, err = await portico(
                "token", "-u", "admin", "--password-stdin", "--grpc", _grpc(served),
                stdin=ADMIN_PASSWORD + "\n",
            )  # fmt: skip
            assert status == 0, err
            token = out.strip()
            assert token.count(".") == 2 and not login_file().exists()  # printed, not kept
            status, out, err = await portico(
                "call", VERSION, "--grpc", _grpc(served), "--token", token
            )
            assert status == 0, err

            # With a login, the saved token, as it is.
            assert (await _log_in("--grpc", _grpc(served)))[0] == 0
            status, out, _ = await portico("token")
            assert (status, out.strip()) == (0, json.loads(login_file().read_text())["token"])

    run(check())


def test_a_script_reading_a_token_stops_at_a_wrong_password(tmp_path: Path) -> None:
    """The docs' recipe, TOKEN=$(portico token ...), fails in `set -e` with one line, where
    `curl ... | python3 -c '...["token"]'` printed a KeyError traceback."""

    async def check() -> None:
        async with running(tmp_path / "data") as served:
            script = (
                "set -e\n"
                f"TOKEN=$(printf '%s\\n' \"$1\" | portico token -u admin --password-stdin"
                f" --grpc {_grpc(served)})\n"
                "echo got-a-token\n"
            )
            bin_dir = Path(__import__("sys").executable).parent
            env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(Path.home())}
            for password, code, said in (
                ("wrong-password", 1, "portico: login refused: invalid username or password\n"),
                (ADMIN_PASSWORD, 0, ""),
            ):
                done = await __import__("asyncio").to_thread(
                    subprocess.run, ["bash", "-c", script, "bash", password], env=env,
                    capture_output=True, text=True, timeout=120,
                )  # fmt: skip
                assert (done.returncode, done.stderr) == (code, said)
                assert done.stdout == ("got-a-token\n" if code == 0 else "")

    run(check())


def test_an_expired_token_says_to_log_in_again(tmp_path: Path) -> None:
    async def check() -> None:
        async with (
            running(tmp_path / "data") as served,
            uvicorn_serving(served.portico.http_app) as rest,
        ):
            assert (await _log_in("--grpc", _grpc(served)))[0] == 0
            gate = served.portico.gate
            assert gate is not None
            # Issued two hours ago: past its hour and the leeway of 30 s.
            old, _ = gate.issuer.issue(account_id="1", username="admin", role="admin",
                                       password_stamp="", now=time.time() - 7200)  # fmt: skip
            saved = json.loads(login_file().read_text())
            login_file().write_text(json.dumps({**saved, "token": old}))

            refused = await served.http.get(
                "/api/v1/version", headers={"authorization": f"Bearer {old}"}
            )
            assert refused.status_code == 401
            assert refused.json()["message"] == "the token has expired; log in again"

            for transport in ("grpc", "rest"):
                status, _, err = await portico(
                    "call", VERSION, "--transport", transport, "--rest", f"http://{rest}"
                )
                assert status == 1
                assert err.rstrip().endswith(
                    "portico: the saved login's token was refused (the token has expired); "
                    f"log in again with `portico login --again` (as admin, to {_grpc(served)})"
                ), err
            status, out, err = await portico("token")
            assert (status, out) == (1, "")
            assert err.startswith("portico: the saved login's token expired at ")
            assert err.endswith("; log in again with `portico login --again` "
                                f"(as admin, to {_grpc(served)})")  # fmt: skip

            # --again: the saved login's server and user, a fresh token.
            status, _, err = await portico("login", "--again", "--password-stdin",
                                           stdin=ADMIN_PASSWORD + "\n")  # fmt: skip
            assert status == 0, err
            assert (await portico("call", VERSION))[0] == 0

    run(check())


def test_a_token_of_another_server_says_so(tmp_path: Path) -> None:
    async def check() -> None:
        async with running(tmp_path / "one") as one, running(tmp_path / "two") as two:
            token = await one.login()
            status, _, err = await portico("call", VERSION, "--grpc", _grpc(two), "--token", token)
            assert status == 1
            assert err.rstrip().endswith(
                "portico: the token of --token was refused (the token was not signed by this "
                "server (it is another server's, or this server's signing secret changed "
                "since)); get a new one with `portico token -u USERNAME`"
            ), err

    run(check())


def test_a_fresh_login_never_inherits_the_saved_address(tmp_path: Path, monkeypatch) -> None:
    """one-port.md's `portico login --grpc 127.0.0.1:8080`, then the default server again,
    where 8080 is uvicorn's REST port: `call` says so in one sentence, and `login` goes where
    the flags and the shell say, not to the saved login's address."""

    async def check() -> None:
        async with (
            running(tmp_path / "data") as served,
            uvicorn_serving(served.portico.http_app) as rest,
        ):
            # A login kept by the one-port server, whose gRPC was on the HTTP port...
            login_file().parent.mkdir(parents=True)
            login_file().write_text(json.dumps({
                "transport": "grpc", "grpc": rest, "rest": f"http://{rest}", "token": "x.y.z",
                "username": "admin",
            }))  # fmt: skip
            # ... and now that port is uvicorn's, HTTP/1.1 only.
            status, out, err = await portico("call", VERSION)
            assert (status, out) == (1, "")
            assert err.startswith(
                f"portico: {rest} (the saved login's gRPC address) speaks HTTP/1.1 only, not "
                "gRPC: it is a REST port; give the gRPC port with --grpc HOST:PORT"
            ), err
            assert "Failed parsing HTTP/2" not in err and "\n" not in err.strip()

            # A fresh login goes to the shell's server, not the saved address.
            monkeypatch.setenv("PORTICO_GRPC_PORT", str(served.portico.grpc_port))
            status, _, err = await _log_in()
            assert status == 0, err
            assert json.loads(login_file().read_text())["grpc"] == _grpc(served)
            status, _, err = await portico("call", VERSION)
            assert status == 0, err

    run(check())


def test_a_call_ends_at_its_timeout_with_a_sentence(tmp_path: Path) -> None:
    async def check() -> None:
        async with (
            running(tmp_path / "data") as served,
            uvicorn_serving(served.portico.http_app) as rest,
        ):
            assert (await _log_in("--grpc", _grpc(served), "--rest", f"http://{rest}"))[0] == 0
            for transport in ("grpc", "rest"):
                started = time.monotonic()
                # A follow stream never ends by itself: only the timeout ends it.
                status, _, err = await portico(
                    "call", "v1alpha.PublicAPI/ListenEvents", "--transport", transport,
                    "--timeout", "0.5",
                )  # fmt: skip
                assert status == 1
                assert err.rstrip().endswith("portico: no complete answer within 0.5 s (--timeout)")
                assert '"code": 4' in err
                assert time.monotonic() - started < 20
            status, _, err = await portico("call", VERSION, "--timeout", "0")
            assert status == 2 and "is not a number of seconds" in err

    run(check())
