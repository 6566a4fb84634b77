"""Log lines: one per call when asked (JSON too), audit lines, and never a secret in any line."""

from __future__ import annotations

import json
import logging

import pytest

from app.auth import accounts
from app.gateway.registry import Registry
from app.observe.logs import JsonFormatter, TextFormatter, redact
from tests.harness import ADMIN_PASSWORD, run, running
from tests.observe.probes import grpc_unary

REGISTRY = Registry.from_package("gen")
VERSION = REGISTRY.method("/cnct.kaas.api.Cluster/GetVersionInformation")
SECRET_PASSWORD = "s3cret-Password-never-logged"


def _lines(records: list[logging.LogRecord]) -> list[str]:
    json_format, text_format = JsonFormatter(), TextFormatter()
    return [f(r) for r in records for f in (json_format.format, text_format.format)]


def test_each_call_is_one_json_line_and_no_log_line_holds_a_secret(tmp_path, caplog):
    caplog.set_level(logging.INFO)

    async def scenario() -> str:
        async with running(tmp_path, request_log=True) as server:
            token = await server.login()
            auth = {"authorization": f"Bearer {token}", "x-request-id": "req-rest-1"}
            assert (await server.http.get("/api/v1/version", headers=auth)).status_code == 200
            metadata = (("authorization", f"Bearer {token}"), ("x-request-id", "req-grpc-1"))
            await grpc_unary(server.channel, VERSION, metadata)
            assert server.portico.store is not None and server.portico.gate is not None
            await accounts.add_account(
                server.portico.store, server.portico.gate.hasher, "carol", "viewer", SECRET_PASSWORD
            )
            for _ in range(6):  # the fifth failure locks the account out; the sixth is refused
                await server.http.post(
                    "/v1/auth:login", json={"username": "carol", "password": "wrong-" + token[:8]}
                )
            await accounts.add_account(
                server.portico.store, server.portico.gate.hasher, "dan", "viewer", SECRET_PASSWORD
            )
            await accounts.set_enabled(server.portico.store, "dan", False)
            dan = {"username": "dan", "password": SECRET_PASSWORD}
            assert (await server.http.post("/v1/auth:login", json=dan)).status_code == 401
            await server.http.post(
                "/v1/auth:checkToken", json={"token": token}, headers={"authorization": "x"}
            )
            return token

    token = run(scenario())
    requests = [r for r in caplog.records if r.name == "portico.requests"]
    by_id = {json.loads(JsonFormatter().format(r))["request_id"]: r for r in requests}
    rest = json.loads(JsonFormatter().format(by_id["req-rest-1"]))
    assert rest["transport"] == "rest"
    assert rest["rpc"] == VERSION.full_name
    assert rest["code"] == "OK" and rest["http_status"] == 200
    assert rest["user"] == "admin"
    assert rest["duration_ms"] > 0
    assert {"time", "trace_id"} <= rest.keys()
    grpc_line = json.loads(JsonFormatter().format(by_id["req-grpc-1"]))
    assert (grpc_line["transport"], grpc_line["user"], grpc_line["code"]) == ("grpc", "admin", "OK")
    # One line per call: the login, two version calls, seven failed logins and the token check.
    assert len(requests) == 11

    audit = [r.getMessage() for r in caplog.records if r.name == "portico.audit"]
    assert any(m.startswith("login: user=admin") for m in audit)
    assert any(m.startswith("account added: user=carol role=viewer") for m in audit)
    assert sum(m.startswith("login failed (wrong password): user=carol") for m in audit) == 5
    assert any(m.startswith("login lockout of user:carol@") for m in audit)
    assert any(m.startswith("login refused while locked out: user=carol") for m in audit)
    assert any(m.startswith("account disabled: user=dan") for m in audit)
    assert any(m.startswith("login refused, account disabled: user=dan") for m in audit)

    everything = "\n".join(_lines(caplog.records))
    for secret in (token, ADMIN_PASSWORD, SECRET_PASSWORD, "wrong-" + token[:8]):
        assert secret not in everything


@pytest.mark.parametrize(
    "line",
    [
        "Authorization: Bearer abc.def.ghi",
        "GET /x?token=abcdef&y=1",
        "password=hunter2 in a query",
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl leaked",
    ],
)
def test_credentials_that_reach_a_log_line_are_masked(line):
    masked = redact(line)
    assert "[redacted]" in masked
    for secret in ("abc.def.ghi", "abcdef", "hunter2", "c2lnbmF0dXJl"):
        assert secret not in masked


def test_a_grpc_call_without_a_request_id_logs_the_id_its_reply_carries(tmp_path, caplog):
    # The id is generated once per call: the request log line and the reply's initial metadata
    # name the same one, so a caller can find its call in the log.
    caplog.set_level(logging.INFO)

    async def scenario() -> str:
        async with running(tmp_path, request_log=True) as server:
            token = await server.login()
            call = server.channel.unary_unary(
                VERSION.grpc_path,
                request_serializer=VERSION.input_type.SerializeToString,
                response_deserializer=VERSION.output_type.FromString,
            )(VERSION.input_type(), metadata=(("authorization", f"Bearer {token}"),))
            await call
            sent = dict(await call.initial_metadata())
            return str(sent["x-request-id"])

    request_id = run(scenario())
    lines = [
        json.loads(JsonFormatter().format(r))
        for r in caplog.records
        if r.name == "portico.requests"
    ]
    grpc_lines = [line for line in lines if line["transport"] == "grpc"]
    assert [line["request_id"] for line in grpc_lines] == [request_id]
