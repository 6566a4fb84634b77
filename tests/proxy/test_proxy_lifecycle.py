"""What ``portico proxy`` does as its upstream comes and goes and changes: readiness, recovery,
descriptors re-read on SIGHUP and by polling reflection, from a descriptor set; and the three
auth modes."""

from __future__ import annotations

import json
import signal
import socket
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import grpc
import httpx
import pytest

from tests.harness import eventually, run
from tests.proxy.processes import (
    Process,
    descriptor_set,
    free_port,
    python_gen,
    start_proxy,
    start_python_echo,
)
from tests.reliability.certificates import Authority

pytestmark = pytest.mark.slow  # seconds per test: scheduled first (tests/conftest.py)
# The proxy's HTTP servers: under pyvoy its calls go through Envoy, with a cluster per upstream.
SERVERS = pytest.mark.parametrize("server", ["uvicorn", "pyvoy"])


async def native_say(address: str) -> bytes:
    """``Say`` over native gRPC to ``address``, as raw bytes: SayRequest{text: "hi"}."""
    async with grpc.aio.insecure_channel(address) as channel:
        reply: bytes = await channel.unary_unary("/portico.echo.v1.Echo/Say")(
            b"\n\x02hi", timeout=10
        )
        return reply


async def status_of(base: str, path: str) -> int:
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        return (await http.get(path)).status_code


def answers(base: str, path: str, status: int = 200) -> Callable[[], Awaitable[bool]]:
    """A check for ``eventually``: ``GET path`` answers ``status``."""

    async def check() -> bool:
        return await status_of(base, path) == status

    return check


@SERVERS
def test_an_upstream_restart_turns_readyz_red_then_green_and_sighup_rereads_its_methods(
    tmp_path: Path, server: str
) -> None:
    port = free_port()
    upstream = start_python_echo(python_gen(tmp_path / "old"), port)
    # Polling would notice only in an hour: the signal is what makes the proxy look again.
    flags = ("--upstream", f"127.0.0.1:{port}", "--auth", "none", "--upstream-poll-seconds", "3600")
    proxy, base = start_proxy(*flags, "--server", server)
    newer = None
    try:

        async def scenario() -> None:
            await eventually(answers(base, "/readyz"), 30, what="/readyz 200 at first")
            assert await status_of(base, "/v1/say/up") == 200
            assert await status_of(base, "/v1/shout/up") == 404
            upstream.stop()
            await eventually(
                answers(base, "/readyz", 503), 30, what="/readyz 503 with the upstream down"
            )
            async with httpx.AsyncClient(base_url=base, timeout=10) as http:
                said = (await http.get("/readyz")).json()
                down = await http.get("/v1/say/down")
            # Not "starting": the upstream it had is gone, and named.
            assert said == {"status": "upstream unavailable", "upstream": f"127.0.0.1:{port}"}
            assert down.status_code == 503
            assert down.json()["code"] == 14  # UNAVAILABLE
            # Back, and newer: it has gained a method.
            nonlocal newer
            newer = start_python_echo(python_gen(tmp_path / "new", extra=True), port)
            await eventually(answers(base, "/readyz"), 30, what="/readyz 200 once it is back")
            assert await status_of(base, "/v1/say/again") == 200
            proxy.signal(signal.SIGHUP)
            await eventually(
                answers(base, "/v1/shout/hi"), 30, what="GET /v1/shout/hi served after SIGHUP"
            )

        run(scenario())
    finally:
        proxy.stop()
        upstream.stop()
        if newer is not None:
            newer.stop()


def test_polling_v1_reflection_notices_a_new_method_without_a_signal(tmp_path: Path) -> None:
    port = free_port()
    # "both": the upstream serves reflection v1 as well, which the proxy asks first.
    upstream = start_python_echo(python_gen(tmp_path / "old"), port, reflection="both")
    flags = ("--upstream", f"127.0.0.1:{port}", "--auth", "none", "--upstream-poll-seconds", "0.2")
    proxy, base = start_proxy(*flags)
    newer = None
    try:

        async def scenario() -> None:
            await eventually(answers(base, "/v1/say/hi"), 30, what="GET /v1/say/hi served")
            assert await status_of(base, "/v1/shout/hi") == 404
            upstream.stop()
            nonlocal newer
            newer = start_python_echo(python_gen(tmp_path / "new", extra=True), port, "both")
            await eventually(
                answers(base, "/v1/shout/hi"), 30, what="GET /v1/shout/hi served after a poll"
            )

        run(scenario())
    finally:
        proxy.stop()
        upstream.stop()
        if newer is not None:
            newer.stop()


def test_a_descriptor_set_replaces_reflection(tmp_path: Path) -> None:
    port = free_port()
    # No reflection: the descriptor set is all the proxy knows the upstream by.
    upstream = start_python_echo(python_gen(tmp_path), port, reflection="none")
    proxy, base = start_proxy(
        "--upstream",
        f"127.0.0.1:{port}",
        "--auth",
        "none",
        "--descriptor-set",
        str(descriptor_set(tmp_path, comments=True)),
    )
    try:
        assert run(status_of(base, "/v1/say/from-a-file")) == 200
        assert run(status_of(base, "/readyz")) == 200
        # The set's source info brings the .proto's comments to the document (and the
        # explorer), which grpcio's reflection never carries.
        say = httpx.get(f"{base}/openapi.json", timeout=10).json()["paths"]["/v1/say/{text}"]
        assert "The text back, with the metadata the server received." in json.dumps(say)
    finally:
        proxy.stop()
        upstream.stop()


@pytest.fixture(scope="module")
def shared_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An Echo server that the tests which do not stop it share: its address."""
    port = free_port()
    upstream = start_python_echo(python_gen(tmp_path_factory.mktemp("shared")), port)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        upstream.stop()


@SERVERS
def test_auth_jwt_gates_calls_with_portico_logins_and_keeps_the_token_to_itself(
    tmp_path: Path, shared_upstream: str, server: str
) -> None:
    proxy, base = start_proxy(
        "--upstream",
        shared_upstream,
        "--auth",
        "jwt",
        "--server",
        server,
        data_dir=tmp_path / "data",
    )
    try:

        async def scenario() -> None:
            async with httpx.AsyncClient(base_url=base, timeout=10) as http:
                anonymous = await http.get("/v1/say/hi")
                assert anonymous.status_code == 401
                login = await http.post(
                    "/v1/auth:login", json={"username": "admin", "password": "admin-password"}
                )
                assert login.status_code == 200, login.text
                token = login.json()["token"]
                signed_in = await http.get(
                    "/v1/say/hi", headers={"authorization": f"Bearer {token}"}
                )
                assert signed_in.status_code == 200, signed_in.text
                assert "authorization" not in signed_in.json()["metadata"]
                document = (await http.get("/openapi.json")).json()
                assert "/v1/auth:login" in document["paths"]
                assert "/v1/say/{text}" in document["paths"]

        run(scenario())
    finally:
        proxy.stop()


@SERVERS
def test_auth_passthrough_forwards_the_callers_credentials(
    shared_upstream: str, server: str
) -> None:
    proxy, base = start_proxy(
        "--upstream", shared_upstream, "--auth", "passthrough", "--server", server
    )
    try:

        async def scenario() -> httpx.Response:
            async with httpx.AsyncClient(base_url=base, timeout=10) as http:
                return await http.get("/v1/say/hi", headers={"authorization": "Bearer theirs"})

        response = run(scenario())
        assert response.status_code == 200
        assert response.json()["metadata"]["authorization"] == "Bearer theirs"
    finally:
        proxy.stop()


@SERVERS
def test_tls_to_the_upstream_with_a_ca_file_and_a_client_certificate(
    tmp_path: Path, server: str
) -> None:
    servers, port, upstream, flags = _tls_upstream(tmp_path, server)
    proxy, base = start_proxy(*flags, "--upstream-ca", str(servers.issued.cert_path))
    try:
        assert run(status_of(base, "/v1/say/secure")) == 200

        async def without_a_client_certificate() -> grpc.StatusCode:
            credentials = grpc.ssl_channel_credentials(servers.issued.cert_pem)
            async with grpc.aio.secure_channel(f"127.0.0.1:{port}", credentials) as channel:
                try:
                    await channel.unary_unary("/portico.echo.v1.Echo/Say")(b"", timeout=5)
                except grpc.aio.AioRpcError as exc:
                    return exc.code()
            return grpc.StatusCode.OK

        # The upstream wants the certificate the proxy presented.
        assert run(without_a_client_certificate()) is grpc.StatusCode.UNAVAILABLE
    finally:
        proxy.stop()
        upstream.stop()


@SERVERS
def test_several_upstreams_each_answer_their_own_services(tmp_path: Path, server: str) -> None:
    first, second = free_port(), free_port()
    one = start_python_echo(python_gen(tmp_path / "v1"), first)
    two = start_python_echo(python_gen(tmp_path / "v2", version="v2"), second)
    flags = ("--upstream", f"127.0.0.1:{first}", "--upstream", f"127.0.0.1:{second}")
    proxy, base = start_proxy(*flags, "--auth", "none", "--server", server)
    try:

        async def scenario() -> None:
            assert await status_of(base, "/v1/say/one") == 200
            assert await status_of(base, "/v2/say/two") == 200
            two.stop()
            # Only the second upstream's calls fail; readiness needs every upstream.
            await eventually(answers(base, "/v2/say/two", 503), 30, what="v2 calls UNAVAILABLE")
            assert await status_of(base, "/v1/say/one") == 200
            assert await status_of(base, "/readyz") == 503

        run(scenario())
    finally:
        proxy.stop()
        one.stop()
        two.stop()


@SERVERS
def test_several_workers_share_the_port_and_each_rereads_on_sighup(
    tmp_path: Path, server: str
) -> None:
    port = free_port()
    upstream = start_python_echo(python_gen(tmp_path / "old"), port)
    flags = ("--upstream", f"127.0.0.1:{port}", "--upstream-poll-seconds", "3600")
    # The server from the environment (PORTICO_SERVER), as a deployment would set it.
    env = {"PORTICO_SERVER": server}
    proxy, base = start_proxy(*flags, "--auth", "none", "--workers", "2", env=env)
    newer = None

    async def on_fresh_connections(path: str, times: int) -> list[httpx.Response]:
        replies = []
        for _ in range(times):
            async with httpx.AsyncClient(base_url=base, timeout=10) as http:
                replies.append(await http.get(path))
        return replies

    async def all_ready() -> bool:
        return all(r.status_code == 200 for r in await on_fresh_connections("/readyz", 20))

    async def all_shout() -> bool:
        return all(r.status_code == 200 for r in await on_fresh_connections("/v1/shout/hi", 20))

    try:
        replies = run(on_fresh_connections("/v1/say/hi", 40))
        assert all(r.status_code == 200 for r in replies)
        # Each worker has its own connection to the upstream, which names its address. The
        # kernel spreads connections by their addresses: 40 fresh ones would all reach one of
        # two workers once in 2**39 runs.
        assert len({r.headers["grpc-metadata-x-peer"] for r in replies}) >= 2
        if server == "pyvoy":  # what only pyvoy serves: native gRPC on the same port
            assert b"hi" in run(native_say(base.removeprefix("http://")))
        upstream.stop()
        newer = start_python_echo(python_gen(tmp_path / "new", extra=True), port)
        # Each worker reconnected (its readiness asks its own channel) before it is told to
        # read the descriptors again: one that cannot reach the upstream keeps what it had.
        run(eventually(all_ready, 30, what="/readyz 200 from every worker"))
        proxy.signal(signal.SIGHUP)  # every worker reads the upstream's new method
        run(eventually(all_shout, 30, what="GET /v1/shout/hi served by every worker"))
    finally:
        proxy.stop()
        upstream.stop()
        if newer is not None:
            newer.stop()


@SERVERS
def test_an_upstream_certificate_the_ca_did_not_sign_is_refused(
    tmp_path: Path, server: str
) -> None:
    _, _, upstream, flags = _tls_upstream(tmp_path, server)
    strangers = Authority(tmp_path / "pki", "Another CA")
    # The descriptors from a file: no call, reflection's included, may reach an upstream the CA
    # given does not vouch for.
    proxy, base = start_proxy(
        *flags, "--descriptor-set", str(descriptor_set(tmp_path)),
        "--upstream-ca", str(strangers.issued.cert_path), ready=False,
    )  # fmt: skip
    try:
        assert run(status_of(base, "/v1/say/secure")) == 503
    finally:
        proxy.stop()
        upstream.stop()


def _tls_upstream(tmp_path: Path, server: str) -> tuple[Authority, int, Process, tuple[str, ...]]:
    """An echo upstream on TLS that wants a client certificate from the proxy's CA: the
    upstream's CA, its port, the upstream, and the proxy's flags for it (no CA of its own yet)."""
    servers = Authority(tmp_path / "pki", "Upstream CA")
    clients = Authority(tmp_path / "pki", "Proxy CA")
    server_cert = servers.issue("echo", server=True)
    client_cert = clients.issue("portico-proxy", server=False)
    port = free_port()
    tls = (str(server_cert.cert_path), str(server_cert.key_path), str(clients.issued.cert_path))
    upstream = start_python_echo(python_gen(tmp_path), port, tls=tls)
    flags = ("--upstream", f"127.0.0.1:{port}", "--auth", "none", "--server", server)
    flags += ("--upstream-cert", str(client_cert.cert_path))
    flags += ("--upstream-key", str(client_cert.key_path))
    return servers, port, upstream, flags


def test_under_pyvoy_the_start_line_comes_once_the_port_takes_connections() -> None:
    """Envoy opens its listener after the workers said they were ready: the line came first,
    and a client that read it was refused more often than not."""
    upstream = f"127.0.0.1:{free_port()}"  # nobody: the proxy serves without its upstream
    for _ in range(4):
        proxy, base = start_proxy("--upstream", upstream, "--auth", "none", "--server", "pyvoy",
                                  ready=False)  # fmt: skip
        try:
            host, port = base.removeprefix("http://").split(":")
            socket.create_connection((host, int(port)), timeout=5).close()
        finally:
            proxy.stop()
