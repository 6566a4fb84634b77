"""A small edge world for end-to-end tests: the REST side with a token, keys and the objects."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from websockets.asyncio.client import ClientConnection, connect

from tests.harness import Running, uvicorn_serving

TIMEOUT = 10.0
OPERATOR = {"name": "Acme Telecom"}
DEVELOPER = {"name": "Niantic"}
CLOUDLET = {"operator_key": OPERATOR, "name": "berlin-1"}
APP = {"developer_key": DEVELOPER, "name": "pokemon", "version": "1.0"}
CLUSTER_INST = {"cluster_key": {"name": "games"}, "cloudlet_key": CLOUDLET, "developer": "Niantic"}
APP_INST = {"app_key": APP, "cluster_inst_key": CLUSTER_INST}


class Rest:
    """The REST side of one server, with a token."""

    def __init__(self, server: Running, token: str) -> None:
        self.http = server.http
        self.token = token
        self.headers = {"authorization": f"Bearer {token}"}

    async def post(self, path: str, body: dict) -> tuple[int, Any]:
        reply = await self.http.post(path, json=body, headers=self.headers)
        if reply.headers.get("content-type") == "application/x-ndjson":
            return reply.status_code, [json.loads(line) for line in reply.text.splitlines()]
        return reply.status_code, reply.json()

    async def ok(self, path: str, body: dict) -> Any:
        status, answer = await self.post(path, body)
        assert status == 200, answer
        return answer

    async def show(self, what: str, body: dict | None = None) -> list[dict]:
        lines = await self.ok(f"/show/{what}", body or {})
        return [line["result"] for line in lines]

    async def cloudlet_refs(self, key: dict | None = None) -> dict:
        """The one CloudletRefs (of ``key``, when given), as JSON; admin only."""
        lines = await self.ok("/v1/edge/cloudletrefs:show", {"key": key} if key else {})
        [refs] = [line["result"] for line in lines]
        return refs

    async def progress(self, path: str, body: dict) -> list[str]:
        """The messages of a progress stream (which must end without an error)."""
        lines = await self.ok(path, body)
        assert all("result" in line for line in lines), lines
        return [line["result"]["message"] for line in lines]


async def rest_api(server: Running) -> Rest:
    return Rest(server, await server.login())


@contextlib.asynccontextmanager
async def notify_socket(server: Running, token: str) -> AsyncIterator[ClientConnection]:
    """The Notify stream's WebSocket (its REST side), on a real uvicorn serving ``server``."""
    async with (
        uvicorn_serving(server.portico.http_app) as address,
        connect(
            f"ws://{address}/v1/edge/notices:stream",
            additional_headers={"authorization": f"Bearer {token}"},
        ) as socket,
    ):
        yield socket


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


async def build_world(api: Rest, *, flavor_ram: int = 1024) -> None:
    """An operator with a cloudlet, a developer with an app and a cluster, and a flavor."""
    await api.ok("/create/operator", {"key": OPERATOR})
    await api.ok("/create/developer", {"key": DEVELOPER, "email": "dev@niantic.example"})
    flavor = {"key": {"name": "x1.small"}, "ram": flavor_ram, "vcpus": 1, "disk": 10}
    await api.ok("/create/flavor", flavor)
    assert await api.progress("/create/cloudlet", {"key": CLOUDLET}) == [
        "Create requested",
        "Creating platform VM",
        "Starting CRMServer",
        "Setting up the shared Root LB",
        "Ready",
    ]
    await api.ok(
        "/create/cluster", {"key": {"name": "games"}, "default_flavor": {"name": "x1.small"}}
    )
    await api.ok(
        "/create/app",
        {"key": APP, "default_flavor": {"name": "x1.small"}, "access_ports": "tcp:443,udp:10002"},
    )


def violation_fields(error: grpc.aio.AioRpcError) -> list[str]:
    status = rpc_status.from_call(error)
    fields = []
    for detail in status.details if status else []:
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(bad):
            fields.extend(v.field for v in bad.field_violations)
    return fields
