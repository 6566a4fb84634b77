"""Item 4: logins are throttled per user at an address and per address, before any password
check, with counts shared through the store, forwarded addresses from trusted proxies only, and
an audit line for every failure, lockout and disabled-account attempt."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator

import grpc
import httpx

from app.auth.passwords import PasswordHasher
from gen.services.auth import auth_pb2, auth_pb2_grpc
from tests.harness import ADMIN_PASSWORD, Running, run, running

WRONG = {"username": "admin", "password": "wrong-password"}
RIGHT = {"username": "admin", "password": ADMIN_PASSWORD}


@dataclasses.dataclass(frozen=True)
class CountingHasher(PasswordHasher):
    """The real hasher, counting the password checks it makes (known or unknown user)."""

    checks: list[str] = dataclasses.field(default_factory=list)

    def verify(self, password: str, stored: str) -> bool:
        self.checks.append("verify")
        return super().verify(password, stored)

    def burn(self, password: str) -> None:
        self.checks.append("burn")
        super().burn(password)


def _counting(server: Running) -> CountingHasher:
    gate = server.portico.gate
    assert gate is not None
    gate.hasher = CountingHasher(cost=gate.hasher.cost)
    return gate.hasher


@contextlib.asynccontextmanager
async def client_at(server: Running, address: str) -> AsyncIterator[httpx.AsyncClient]:
    """A REST client whose connection comes from ``address``."""
    transport = httpx.ASGITransport(app=server.portico.http_app, client=(address, 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://portico") as http:
        yield http


def test_200_concurrent_wrong_passwords_get_at_most_the_allowed_checks(tmp_path):
    async def burst() -> tuple[list[int], int]:
        async with running(tmp_path) as server:
            hasher = _counting(server)
            replies = await asyncio.gather(
                *(server.http.post("/v1/auth:login", json=WRONG) for _ in range(200))
            )
            return sorted(r.status_code for r in replies), len(hasher.checks)

    statuses, checks = run(burst())
    assert checks <= 5
    assert statuses == [401] * checks + [429] * (200 - checks)


def test_a_locked_out_attacker_does_not_lock_the_user_out_elsewhere(tmp_path):
    async def scenario() -> tuple[list[int], int, int, str]:
        async with running(tmp_path) as server:
            async with client_at(server, "198.51.100.66") as attacker:
                attempts = [
                    (await attacker.post("/v1/auth:login", json=WRONG)).status_code
                    for _ in range(8)
                ]
                still = (await attacker.post("/v1/auth:login", json=RIGHT)).status_code
            async with client_at(server, "192.0.2.10") as admin:
                elsewhere = (await admin.post("/v1/auth:login", json=RIGHT)).status_code
            stub = auth_pb2_grpc.AuthServiceStub(server.channel)  # from loopback
            token = (await stub.Login(auth_pb2.LoginRequest(**RIGHT))).token
            return attempts, still, elsewhere, token

    attempts, still, elsewhere, token = run(scenario())
    assert attempts == [401] * 5 + [429] * 3
    assert still == 429
    assert elsewhere == 200 and token


def test_one_address_cannot_spray_many_usernames(tmp_path):
    async def spray() -> list[int]:
        async with running(tmp_path) as server, client_at(server, "198.51.100.77") as attacker:
            return [
                (
                    await attacker.post(
                        "/v1/auth:login", json={"username": f"user{i}", "password": "guess-1"}
                    )
                ).status_code
                for i in range(25)
            ]

    assert run(spray()) == [401] * 20 + [429] * 5


def test_forwarded_addresses_are_believed_from_trusted_proxies_only(tmp_path):
    async def through_proxy(trusted: tuple[str, ...]) -> tuple[int, int]:
        """Lock out one client behind the proxy; then another client behind it logs in."""
        async with running(tmp_path, trusted_proxies=trusted) as server:
            async with client_at(server, "203.0.113.5") as proxy:
                for _ in range(5):
                    reply = await proxy.post(
                        "/v1/auth:login",
                        json=WRONG,
                        headers={"x-forwarded-for": "6.6.6.6, 198.51.100.7"},
                    )
                    assert reply.status_code == 401
                other = await proxy.post(
                    "/v1/auth:login",
                    json=RIGHT,
                    headers={"forwarded": 'for="198.51.100.8:5000";proto=https'},
                )
            # gRPC through a trusted proxy on loopback: its X-Forwarded-For is believed too.
            stub = auth_pb2_grpc.AuthServiceStub(server.channel)
            try:
                await stub.Login(
                    auth_pb2.LoginRequest(**RIGHT),
                    metadata=(("x-forwarded-for", "198.51.100.7"),),
                )
                grpc_code = grpc.StatusCode.OK
            except grpc.aio.AioRpcError as error:
                grpc_code = error.code()
            return other.status_code, grpc_code.value[0]

    trusted = ("203.0.113.0/24", "127.0.0.1/32")
    assert run(through_proxy(trusted)) == (200, grpc.StatusCode.RESOURCE_EXHAUSTED.value[0])
    # By default nothing is believed: both clients are the proxy, which is now locked out.
    (tmp_path / "portico.db").unlink()
    assert run(through_proxy(()))[0] == 429


def test_counts_are_shared_between_replicas_of_one_store(tmp_path):
    async def two_replicas() -> int:
        async with running(tmp_path) as one, running(tmp_path) as two:
            for _ in range(5):
                assert (await one.http.post("/v1/auth:login", json=WRONG)).status_code == 401
            return (await two.http.post("/v1/auth:login", json=RIGHT)).status_code

    assert run(two_replicas()) == 429


def test_every_failure_lockout_and_disabled_attempt_is_an_audit_line(tmp_path, caplog):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            await server.add_account("carol", "viewer")
            assert server.portico.store is not None
            await server.portico.store.accounts.update("carol", enabled=False)
            for i in range(5):
                await server.http.post(
                    "/v1/auth:login", json=WRONG, headers={"x-request-id": f"attempt-{i}"}
                )
            await server.http.post(
                "/v1/auth:login",
                json={"username": "carol", "password": "password1"},
                headers={"x-request-id": "disabled-1"},
            )

    with caplog.at_level(logging.INFO, logger="portico.audit"):
        run(scenario())
    lines = [r.getMessage() for r in caplog.records if r.name == "portico.audit"]
    address = "address=203.0.113.9"
    for i in range(5):
        assert (
            f"login failed (wrong password): user=admin {address} request_id=attempt-{i}" in lines
        )
    assert (
        "login lockout of user:admin@203.0.113.9 for 60 s after repeated failures: "
        f"user=admin {address} request_id=attempt-4"
    ) in lines
    assert f"login refused, account disabled: user=carol {address} request_id=disabled-1" in lines
