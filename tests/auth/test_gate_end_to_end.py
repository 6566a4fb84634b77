"""The gate on both transports: login, logout, token checks, forged tokens, roles, throttling."""

from __future__ import annotations

import asyncio
import io
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from jose import jwt

from app import catalog
from app.auth import accounts
from app.auth.policy import Access
from app.cli.commands import main as cli_main
from app.gateway.registry import Method, Registry
from tests.gateway.wire import frame, frames
from tests.grpc_calls import grpc_call
from tests.harness import ADMIN_PASSWORD, eventually, run, running

REGISTRY = Registry.from_package("gen")
_VARIABLE = re.compile(r"\{[^}]*\}")


def _bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def rest_routes(method: Method) -> Iterator[tuple[str, str]]:
    """Every (verb, concrete path) a method is reachable on, variables filled with ``x``."""
    for binding in method.http:
        yield binding.verb, _VARIABLE.sub("x", binding.path)
    yield "POST", f"/{method.service}/{method.name}"


def test_login_gives_a_token_that_opens_both_transports(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            reply = await server.http.post(
                "/v1/auth:login", json={"username": "admin", "password": ADMIN_PASSWORD}
            )
            assert reply.status_code == 200
            body = reply.json()
            assert body["account_id"] == "1"
            claims = jwt.get_unverified_claims(body["token"])
            assert body["expires"]["timestamp"].startswith(
                time.strftime("%Y-%m-%dT%H:%M", time.gmtime(claims["exp"]))
            )
            check = await server.http.post("/v1/auth:checkToken", json={"token": body["token"]})
            assert check.json() == {"success": True}
            logout = REGISTRY.method("/services.auth.AuthService/Logout")
            assert await grpc_call(server.channel, logout, body["token"]) is grpc.StatusCode.OK

    run(scenario())


def test_wrong_password_and_unknown_user_get_the_same_answer(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            answers = []
            for username in ("admin", "nobody"):
                reply = await server.http.post(
                    "/v1/auth:login", json={"username": username, "password": "not-the-password"}
                )
                answers.append((reply.status_code, reply.json()))
            assert answers[0] == answers[1]
            assert answers[0][0] == 401
            assert answers[0][1]["message"] == "invalid username or password"

    run(scenario())


def test_malformed_credentials_name_the_field(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            reply = await server.http.post(
                "/v1/auth:login", json={"username": "ab", "password": "x" * 71}
            )
            assert reply.status_code == 400
            violations = reply.json()["details"][0]["field_violations"]
            assert [v["field"] for v in violations] == ["username", "password"]

    run(scenario())


def test_too_short_username_and_password_are_both_named_on_every_transport(tmp_path):
    """Every field rule is checked before any is reported: a 3-byte password is too short
    (6 bytes at least) even though its length in characters is within the schema's bounds, and
    a 2-character password of 4-byte characters is long enough."""

    async def scenario() -> None:
        async with running(tmp_path) as server:
            reply = await server.http.post(
                "/v1/auth:login", json={"username": "ab", "password": "abc"}
            )
            assert reply.status_code == 400
            violations = reply.json()["details"][0]["field_violations"]
            assert [v["field"] for v in violations] == ["username", "password"]
            assert "bytes" in violations[1]["description"]
            method = REGISTRY.method("/services.auth.AuthService/Login")
            call = server.channel.unary_unary(
                method.grpc_path,
                request_serializer=method.input_type.SerializeToString,
                response_deserializer=method.output_type.FromString,
            )
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call(method.input_type(username="ab", password="abc"))
            assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            status = rpc_status.from_call(refused.value)
            assert status is not None
            details = error_details_pb2.BadRequest()
            status.details[0].Unpack(details)
            assert [v.field for v in details.field_violations] == ["username", "password"]
            # Long enough in bytes (8), though only 2 characters: wrong, but not malformed.
            reply = await server.http.post(
                "/v1/auth:login", json={"username": "admin", "password": "\U0001f600" * 2}
            )
            assert reply.status_code == 401, reply.text

    run(scenario())


def test_every_route_and_method_but_the_public_ones_refuses_an_anonymous_caller(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            refused_rest, refused_grpc = [], []
            for method in REGISTRY:
                public = catalog.policy(REGISTRY).access(method.full_name) is Access.PUBLIC
                for verb, path in rest_routes(method):
                    reply = await server.http.request(
                        verb, path, json={} if verb != "GET" else None
                    )
                    if not public:
                        assert reply.status_code == 401, (verb, path, reply.text)
                        assert reply.headers["www-authenticate"].startswith("Bearer")
                        refused_rest.append(path)
                code = await grpc_call(server.channel, method)
                if not public:
                    assert code is grpc.StatusCode.UNAUTHENTICATED, method.full_name
                    refused_grpc.append(method.full_name)
            assert len(refused_grpc) == len(REGISTRY) - 2
            assert len(refused_rest) > len(refused_grpc)

    run(scenario())


def _forged(kind: str, real: str) -> str:
    claims = jwt.get_unverified_claims(real)
    if kind == "wrong-key":
        return jwt.encode(claims, "k" * 40, algorithm="HS256")
    if kind == "expired":
        claims["exp"] = int(time.time()) - 3600
        return jwt.encode(claims, "unused" * 8, algorithm="HS256")
    if kind == "alg-none":
        _header, payload, _ = real.split(".")
        return "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + payload + "."
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["wrong-key", "expired", "alg-none"])
def test_forged_tokens_are_refused_on_both_transports(tmp_path, kind):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = _forged(kind, await server.login())
            reply = await server.http.get("/api/v1/cluster/list", headers=dict(_bearer(token)))
            assert reply.status_code == 401
            assert reply.headers["www-authenticate"] == 'Bearer error="invalid_token"'
            method = REGISTRY.method("/cnct.kaas.api.Cluster/GetClusterList")
            assert await grpc_call(server.channel, method, token) is grpc.StatusCode.UNAUTHENTICATED
            check = await server.http.post("/v1/auth:checkToken", json={"token": token})
            assert check.json() == {"success": False}

    run(scenario())


def test_logout_revokes_the_token_everywhere(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            other = await server.login()
            reply = await server.http.post("/v1/auth:logout", json={}, headers=dict(_bearer(token)))
            assert reply.json() == {"success": True}
            method = REGISTRY.method("/cnct.kaas.api.Cluster/GetClusterList")
            assert await grpc_call(server.channel, method, token) is grpc.StatusCode.UNAUTHENTICATED
            check = await server.http.post("/v1/auth:checkToken", json={"token": token})
            assert check.json() == {"success": False}
            # Only that token: another session of the same account goes on.
            check = await server.http.post("/v1/auth:checkToken", json={"token": other})
            assert check.json() == {"success": True}

    run(scenario())


def test_a_disabled_account_loses_its_tokens(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.add_account("carol", "operator")
            await server.portico.store.accounts.update("carol", enabled=False)
            server.portico.gate.recheck_seconds = 0  # as another replica would after a second
            method = REGISTRY.method("/cnct.kaas.api.Cluster/GetClusterList")
            assert await grpc_call(server.channel, method, token) is grpc.StatusCode.UNAUTHENTICATED
            reply = await server.http.post(
                "/v1/auth:login", json={"username": "carol", "password": "password1"}
            )
            assert reply.status_code == 401

    run(scenario())


LIST = "/cnct.kaas.api.Cluster/GetClusterList"


async def _answers(server: Any, token: str) -> dict[str, object]:
    """How each protocol answers a call with ``token``: REST, Connect and gRPC-Web by HTTP
    status, native gRPC (the grpc.aio port) by code, and CheckToken."""
    auth = dict(_bearer(token))
    rest = await server.http.get("/api/v1/cluster/list", headers=auth)
    connect = await server.http.post(
        LIST, content=b"{}", headers={**auth, "content-type": "application/json"}
    )
    web = await server.http.post(
        LIST, content=frame(b""), headers={**auth, "content-type": "application/grpc-web+proto"}
    )
    web_status = next(body for flags, body in frames(web.content) if flags & 0x80)
    check = await server.http.post("/v1/auth:checkToken", json={"token": token})
    return {
        "rest": rest.status_code,
        "connect": connect.status_code,
        "grpc-web": web_status.split(b"\r\n", 1)[0],
        "grpc": await grpc_call(server.channel, REGISTRY.method(LIST), token),
        "checkToken": check.json()["success"],
    }


ADMITTED = {
    "rest": 200,
    "connect": 200,
    "grpc-web": b"grpc-status: 0",
    "grpc": grpc.StatusCode.OK,
    "checkToken": True,
}
REFUSED = {
    "rest": 401,
    "connect": 401,
    "grpc-web": b"grpc-status: 16",
    "grpc": grpc.StatusCode.UNAUTHENTICATED,
    "checkToken": False,
}


def test_a_password_change_refuses_the_accounts_earlier_tokens_on_every_protocol(
    tmp_path, monkeypatch
):
    """``portico users set-password``, run beside the server as an operator runs it, refuses
    every token the account had (as disabling it does), within the gate's recheck; a login
    with the new password, and other accounts' tokens, go on."""
    monkeypatch.setenv("PORTICO_PASSWORD_HASH_COST", "16")

    def set_password(password: str) -> None:
        monkeypatch.setattr("sys.stdin", io.StringIO(password + "\n"))
        cli = ["users", "--data-dir", str(tmp_path), "set-password", "carol", "--password-stdin"]
        cli_main(cli)

    async def scenario() -> None:
        async with running(tmp_path) as server:
            old = await server.add_account("carol", "operator")
            other_session = await server.login("carol", "password1")
            admin = await server.login()
            assert await _answers(server, old) == ADMITTED  # and cached by the gate now
            await asyncio.to_thread(set_password, "new-password")
            changed = time.monotonic()

            async def refused() -> bool:
                return await _answers(server, old) == REFUSED

            await eventually(refused, 5, what="the old token refused on every protocol")
            assert time.monotonic() - changed < 3  # the recheck's second, on a busy machine
            assert await _answers(server, other_session) == REFUSED
            reply = await server.http.post(
                "/v1/auth:login", json={"username": "carol", "password": "password1"}
            )
            assert reply.status_code == 401
            new = await server.login("carol", "new-password")
            assert await _answers(server, new) == ADMITTED
            assert await _answers(server, admin) == ADMITTED

    run(scenario())


def test_a_token_of_an_earlier_version_lasts_until_its_account_changes(tmp_path):
    """Tokens issued before tokens carried a password stamp are kept through an upgrade while
    their account is unchanged, and refused once its password changes."""

    async def scenario() -> None:
        async with running(tmp_path) as server:
            await server.add_account("dora", "operator")
            store, gate = server.portico.store, server.portico.gate
            account = await store.accounts.get("dora")
            issued = int(account.updated_at.timestamp()) + 1  # (iat has whole seconds)
            claims = {
                "sub": str(account.id),
                "name": "dora",
                "role": "operator",
                "jti": "issued-by-an-earlier-version",
                "iat": issued,
                "nbf": issued - 1,
                "exp": issued + 600,
                "iss": "portico",
                "aud": "portico",
            }
            legacy = jwt.encode(claims, gate.issuer.secret, algorithm="HS256")
            assert await _answers(server, legacy) == ADMITTED

            async def past_its_second() -> bool:
                return time.time() >= issued + 0.01

            await eventually(past_its_second, 3, what="the clock past the token's issue")
            await accounts.set_password(store, gate.hasher, "dora", "new-password")
            gate.recheck_seconds = 0  # as every replica does within a second
            assert await _answers(server, legacy) == REFUSED

    run(scenario())


@pytest.mark.parametrize(
    ("role", "path", "allowed"),
    [
        ("viewer", "/cnct.kaas.api.Cluster/GetClusterList", True),
        ("viewer", "/cnct.kaas.api.Cluster/CreateCluster", False),
        ("viewer", "/edgeproto.AppApi/DeleteApp", False),
        ("operator", "/edgeproto.CloudletRefsApi/ShowCloudletRefs", False),
        ("operator", "/cnct.kaas.api.Cluster/CreateCluster", True),
        ("node", "/scheduler.NodeService/Register", True),
        ("node", "/scheduler.InstanceService/Create", False),
        ("admin", "/edgeproto.CloudletInfoApi/InjectCloudletInfo", True),
    ],
)
def test_role_matrix_on_both_transports(tmp_path, role, path, allowed):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.add_account("someone", role)
            method = REGISTRY.method(path)
            reply = await server.http.post(path, json={}, headers=dict(_bearer(token)))
            code = await grpc_call(server.channel, method, token)
            if allowed:
                assert reply.status_code not in (401, 403), reply.text
                assert code not in (
                    grpc.StatusCode.UNAUTHENTICATED,
                    grpc.StatusCode.PERMISSION_DENIED,
                )
            else:
                assert reply.status_code == 403, reply.text
                assert code is grpc.StatusCode.PERMISSION_DENIED

    run(scenario())


def test_repeated_failures_are_throttled_with_a_retry_delay(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            wrong = {"username": "admin", "password": "wrong-password"}
            for _ in range(5):
                assert (await server.http.post("/v1/auth:login", json=wrong)).status_code == 401
            reply = await server.http.post(
                "/v1/auth:login", json={"username": "admin", "password": ADMIN_PASSWORD}
            )
            assert reply.status_code == 429
            assert int(reply.headers["retry-after"]) > 0
            # gRPC calls come from another address (loopback): that address is throttled on
            # its own, so lock it out too.
            login = REGISTRY.method("/services.auth.AuthService/Login")
            stub = server.channel.unary_unary(
                login.grpc_path,
                request_serializer=login.input_type.SerializeToString,
                response_deserializer=login.output_type.FromString,
            )
            for _ in range(5):
                with pytest.raises(grpc.aio.AioRpcError) as failure:
                    await stub(login.input_type(username="admin", password="wrong-password"))
                assert failure.value.code() is grpc.StatusCode.UNAUTHENTICATED
            with pytest.raises(grpc.aio.AioRpcError) as failure:
                await stub(login.input_type(username="admin", password=ADMIN_PASSWORD))
            assert failure.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            status = rpc_status.from_call(failure.value)
            retry = error_details_pb2.RetryInfo()
            assert status.details[0].Unpack(retry) and retry.retry_delay.seconds > 0

    run(scenario())


def test_tokens_and_passwords_stay_out_of_the_logs(tmp_path, caplog):
    async def scenario() -> str:
        async with running(tmp_path) as server:
            token = await server.login()
            await server.http.post(
                "/v1/auth:login", json={"username": "admin", "password": "wrong-password"}
            )
            await server.http.get("/api/v1/cluster/list", headers=dict(_bearer(token)))
            return token

    with caplog.at_level("DEBUG"):
        token = run(scenario())
    assert token not in caplog.text
    assert ADMIN_PASSWORD not in caplog.text
    assert "wrong-password" not in caplog.text


def test_a_logout_on_one_replica_is_refused_by_another_within_a_second(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as one, running(tmp_path) as two:
            token = await one.login()
            method = REGISTRY.method("/cnct.kaas.api.Cluster/GetClusterList")
            assert await grpc_call(two.channel, method, token) is grpc.StatusCode.OK  # cached now
            await one.http.post("/v1/auth:logout", json={}, headers=dict(_bearer(token)))
            started = time.monotonic()
            last_accepted = started

            async def refused() -> bool:
                nonlocal last_accepted
                asked = time.monotonic()
                code = await grpc_call(two.channel, method, token)
                if code is grpc.StatusCode.OK:
                    last_accepted = asked
                return code is grpc.StatusCode.UNAUTHENTICATED

            await eventually(refused, 3, what="the other replica refusing the token")
            # No call asked over a second after the logout was let in. Timed by when each call
            # was asked, not answered: on a busy machine one call can take longer than the rest.
            assert last_accepted - started <= 1.2

    run(scenario())


def test_calls_arriving_while_a_token_is_rechecked_share_one_check(tmp_path):
    """When a cached token is due its recheck, the burst of calls carrying it waits for one
    database check instead of each making its own, and all of them get its answer."""

    async def scenario() -> None:
        async with running(tmp_path) as server:
            token = await server.login()
            store, gate = server.portico.store, server.portico.gate
            checks = 0
            is_revoked = store.revocations.is_revoked

            async def slow_is_revoked(jti: str) -> bool:
                nonlocal checks
                checks += 1
                await asyncio.sleep(0.2)  # a slow database: the other calls arrive meanwhile
                return await is_revoked(jti)

            store.revocations.is_revoked = slow_is_revoked
            headers = dict(_bearer(token))

            async def burst() -> set[int]:
                replies = await asyncio.gather(
                    *(server.http.get("/api/v1/version", headers=headers) for _ in range(20))
                )
                return {reply.status_code for reply in replies}

            gate.recheck_seconds = 0  # every entry is due
            assert await burst() == {200}
            assert checks == 1
            claims = gate.issuer.verify(token)
            await store.revocations.revoke(claims.token_id, datetime.now(UTC) + timedelta(hours=1))
            assert await burst() == {401}
            assert checks == 2

    run(scenario())
