"""Connect and gRPC-Web on the whole Portico: the real gate, the seed 001 services, ``/api``."""

from __future__ import annotations

import base64
from pathlib import Path

from gen.services.auth import auth_pb2
from gen.stats import stats_pb2
from tests.gateway.wire import frame, frames
from tests.harness import ADMIN_PASSWORD, run, running

LOGIN = "/api/services.auth.AuthService/Login"
STATS = "/api/stats.StatsService/GetClusterStats"
JSON = {"content-type": "application/json"}


def test_login_then_stats_by_post_and_by_get(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server:
            http = server.http
            login = await http.post(
                LOGIN, json={"username": "admin", "password": ADMIN_PASSWORD}, headers=JSON
            )
            assert login.status_code == 200 and login.json()["accountId"]
            auth = {"authorization": f"Bearer {login.json()['token']}"}
            posted = await http.post(STATS, content=b"{}", headers={**JSON, **auth})
            cluster_id = posted.json()["stats"]["id"]
            assert cluster_id
            # The stats RPCs are marked side-effect free: a cacheable GET works.
            got = await http.get(STATS, params={"encoding": "json", "message": "{}"}, headers=auth)
            assert got.status_code == 200 and got.json()["stats"]["id"] == cluster_id
            binary = await http.post(
                STATS, content=b"", headers={"content-type": "application/proto", **auth}
            )
            reply = stats_pb2.GetClusterStatsResponse.FromString(binary.content)
            assert reply.stats.id == cluster_id

    run(scenario())


def test_the_gate_answers_each_protocol_in_its_form(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as server:
            http = server.http
            anonymous = await http.post(STATS, content=b"{}", headers=JSON)
            assert anonymous.status_code == 401
            assert anonymous.json()["code"] == "unauthenticated"
            wrong = await http.post(
                LOGIN, json={"username": "admin", "password": "wrong-password"}, headers=JSON
            )
            assert wrong.status_code == 401 and wrong.json()["code"] == "unauthenticated"
            token = await server.add_account("nodey", "node")
            refused = await http.post(
                STATS, content=b"{}", headers={**JSON, "authorization": f"Bearer {token}"}
            )
            assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
            web = await http.post(
                STATS,
                content=base64.b64encode(frame(b"")),
                headers={"content-type": "application/grpc-web-text"},
            )
            ((flags, trailer),) = frames(base64.b64decode(web.content))
            assert flags == 0x80 and b"grpc-status: 16" in trailer
            login = auth_pb2.LoginRequest(username="admin", password=ADMIN_PASSWORD)
            web_login = await http.post(
                LOGIN,
                content=frame(login.SerializeToString()),
                headers={"content-type": "application/grpc-web+proto"},
            )
            message, end = frames(web_login.content)
            assert auth_pb2.LoginResponse.FromString(message[1]).token
            assert b"grpc-status: 0" in end[1]

    run(scenario())
