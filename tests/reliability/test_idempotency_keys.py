"""Idempotency keys end to end: a keyed mutating call runs once on either transport, its repeats
get the first outcome (reply or error), a reused key with another request is refused, and
concurrent repeats wait for the first."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import grpc
import pytest

from app.gateway.idempotency import is_mutating
from app.gateway.registry import Registry
from app.settings.config import ConfigurationError, Settings
from app.store.tables import utc_now
from app.store.watch import read_events
from gen.edgeproto import operator_pb2, operator_pb2_grpc
from tests.harness import Running, run, running

OPERATOR_KIND = "edgeproto.Operator"


async def _operators(server: Running) -> int:
    store = server.portico.store
    assert store is not None
    return len(await store.list(OPERATOR_KIND))


async def _events(server: Running) -> int:
    """How many writes of operators the event log holds (other kinds move on in the background)."""
    store = server.portico.store
    assert store is not None
    events, _, _ = await store.database.read(read_events, 0, (OPERATOR_KIND,), 1000)
    return len(events)


def test_which_methods_take_a_key_comes_from_the_descriptors():
    registry = Registry.from_package("gen")
    mutating = {m.full_name for m in registry if is_mutating(m)}
    assert "edgeproto.OperatorApi.CreateOperator" in mutating
    assert "cnct.kaas.api.Cluster.CreateCluster" in mutating
    assert "cnct.kaas.api.Cluster.GetCluster" not in mutating  # an HTTP GET binding
    assert "edgeproto.CloudletApi.CreateCloudlet" not in mutating  # a progress stream
    assert "edgeproto.OperatorApi.ShowOperator" not in mutating  # a stream too


def test_a_repeated_rest_create_answers_the_first_reply_without_a_second_write(tmp_path: Path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            headers = {
                "authorization": f"Bearer {await server.login()}",
                "idempotency-key": "create-acme-1",
            }
            body = {"key": {"name": "Acme"}}
            first = await server.http.post("/create/operator", json=body, headers=headers)
            assert first.status_code == 200, first.text
            writes = await _events(server)
            again = await server.http.post("/create/operator", json=body, headers=headers)
            assert (again.status_code, again.json()) == (200, first.json())
            assert await _events(server) == writes == 1  # nothing written the second time
            assert await _operators(server) == 1

            # Without the key the same request is a new create, and meets the first one.
            plain = {"authorization": headers["authorization"]}
            fresh = await server.http.post("/create/operator", json=body, headers=plain)
            assert fresh.status_code == 409

            other = await server.http.post(
                "/create/operator", json={"key": {"name": "Other"}}, headers=headers
            )
            assert other.status_code == 409
            assert "create-acme-1" in other.json()["message"]
            assert await _operators(server) == 1

    run(scenario())


def test_a_repeat_gets_the_first_error_even_when_the_call_would_now_succeed(tmp_path: Path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            auth = {"authorization": f"Bearer {await server.login()}"}
            body = {"key": {"name": "Acme"}}
            keyed = {**auth, "idempotency-key": "k-2"}
            first = await server.http.post("/delete/operator", json=body, headers=keyed)
            assert first.status_code == 404, first.text
            created = await server.http.post("/create/operator", json=body, headers=auth)
            assert created.status_code == 200
            again = await server.http.post("/delete/operator", json=body, headers=keyed)
            assert (again.status_code, again.json()) == (404, first.json())
            assert await _operators(server) == 1  # the repeat deleted nothing

    run(scenario())


def test_grpc_and_rest_share_keys_and_concurrent_repeats_run_once(tmp_path: Path, store_url: str):
    async def scenario() -> None:
        async with running(tmp_path, database_url=store_url) as server:
            token = await server.login()
            stub = operator_pb2_grpc.OperatorApiStub(server.channel)
            request = operator_pb2.Operator(key=operator_pb2.OperatorKey(name="Acme"))
            metadata = (("authorization", f"Bearer {token}"), ("idempotency-key", "together"))
            replies = await asyncio.gather(
                *(stub.CreateOperator(request, metadata=metadata, timeout=10) for _ in range(8))
            )
            assert len({reply.SerializeToString() for reply in replies}) == 1
            assert await _operators(server) == 1

            rest = await server.http.post(
                "/create/operator",
                json={"key": {"name": "Acme"}},
                headers={"authorization": f"Bearer {token}", "idempotency-key": "together"},
            )
            assert rest.status_code == 200, rest.text

            other = operator_pb2.Operator(key=operator_pb2.OperatorKey(name="Other"))
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.CreateOperator(other, metadata=metadata, timeout=10)
            assert refused.value.code() is grpc.StatusCode.ALREADY_EXISTS
            assert "together" in (refused.value.details() or "")

            # A first error over gRPC is replayed too, with its code and message.
            deleting = (("authorization", f"Bearer {token}"), ("idempotency-key", "gone"))
            missing = operator_pb2.Operator(key=operator_pb2.OperatorKey(name="Nobody"))
            errors = []
            for _ in range(2):
                with pytest.raises(grpc.aio.AioRpcError) as failed:
                    await stub.DeleteOperator(missing, metadata=deleting, timeout=10)
                errors.append((failed.value.code(), failed.value.details()))
            assert errors[0] == errors[1]
            assert errors[0][0] is grpc.StatusCode.NOT_FOUND

    run(scenario())


def test_keys_belong_to_their_caller(tmp_path: Path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            admin = await server.login()
            other = await server.add_account("ops", "admin")
            body = {"key": {"name": "Acme"}}
            for token, status in ((admin, 200), (other, 409)):
                reply = await server.http.post(
                    "/create/operator",
                    json=body,
                    headers={"authorization": f"Bearer {token}", "idempotency-key": "same"},
                )
                # The second caller's key is its own: its create runs, and meets the first.
                assert reply.status_code == status, reply.text

    run(scenario())


def test_a_malformed_key_is_refused_naming_the_header(tmp_path: Path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            reply = await server.http.post(
                "/create/operator",
                json={"key": {"name": "Acme"}},
                headers={
                    "authorization": f"Bearer {await server.login()}",
                    "idempotency-key": "x" * 256,
                },
            )
            assert reply.status_code == 400
            assert "Idempotency-Key" in reply.json()["message"]
            assert await _operators(server) == 0

    run(scenario())


def test_expired_keys_run_again_and_are_forgotten(tmp_path: Path):
    async def scenario() -> None:
        async with running(tmp_path, idempotency_retention_seconds=60) as server:
            store = server.portico.store
            assert store is not None
            headers = {
                "authorization": f"Bearer {await server.login()}",
                "idempotency-key": "old",
            }
            body = {"key": {"name": "Acme"}}
            assert (
                await server.http.post("/delete/operator", json=body, headers=headers)
            ).status_code == 404
            later = utc_now() + timedelta(seconds=61)
            assert await store.idempotency.forget_expired(now=later) == 1
            await server.http.post(
                "/create/operator", json=body, headers={"authorization": headers["authorization"]}
            )
            again = await server.http.post("/delete/operator", json=body, headers=headers)
            assert again.status_code == 200, again.text  # forgotten: the delete ran this time

    run(scenario())


def test_the_settings_are_checked_at_start(tmp_path: Path):
    with pytest.raises(ConfigurationError, match="PORTICO_IDEMPOTENCY_RETENTION_SECONDS"):
        Settings(idempotency_retention_seconds=10)
    with pytest.raises(ConfigurationError, match="PORTICO_TEST_CRASH_AFTER_COMMIT"):
        Settings(test_crash_after_commit="not a method")

    async def start_with_unknown_method() -> None:
        async with running(tmp_path, test_crash_after_commit="no.Such.Method"):
            pass

    with pytest.raises(ConfigurationError, match="not a served method"):
        run(start_with_unknown_method())
