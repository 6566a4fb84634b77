"""``portico serve --demo``: clusters in several states at once, seeded once per database."""

from __future__ import annotations

import asyncio
import time

import yaml

import gen  # noqa: F401
from app.services.koor.service import STORAGE_CLUSTER_KEY, STORAGE_SPEC
from tests.harness import Running, run, running

TIMEOUT = 10.0


async def _clusters(server: Running, headers: dict[str, str]) -> dict[str, dict]:
    reply = await server.http.get("/api/v1/cluster/list", headers=headers)
    return {c["name"]: c for c in reply.json()["clusters"]}


async def _wait(server: Running, headers: dict[str, str], want: dict[str, str]) -> dict:
    deadline = time.monotonic() + TIMEOUT
    while True:
        clusters = await _clusters(server, headers)
        if all(clusters.get(name, {}).get("status") == state for name, state in want.items()):
            return clusters
        assert time.monotonic() < deadline, clusters
        await asyncio.sleep(0.005)


def test_the_demo_shows_clusters_in_several_states_and_a_storage_cluster(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path, demo=True) as server:
            headers = {"authorization": f"Bearer {await server.login()}"}
            clusters = await _wait(server, headers, {"demo-degraded": "DEGRADED"})
            assert set(clusters) == {
                "demo-degraded",
                "demo-provisioning",
                "demo-running",
                "demo-upgrading",
            }
            assert "demo-degraded-workers-1" in clusters["demo-degraded"]["status_message"]
            await _wait(
                server,
                headers,
                {
                    "demo-running": "RUNNING",
                    "demo-provisioning": "RUNNING",
                    "demo-upgrading": "RUNNING",
                },
            )
            reply = await server.http.get(
                "/api/v1/cluster", params={"name": "demo-running"}, headers=headers
            )
            assert yaml.safe_load(reply.json()["cluster"]["kubeconfig"])["kind"] == "Config"
            reply = await server.http.get(
                "/api/v1/cluster/nodesstatus",
                params={"clusterName": "demo-upgrading"},
                headers=headers,
            )
            assert {m["k8sVersion"] for m in reply.json()["machines"]} == {"1.32.0"}
            assert await server.portico.store.get(STORAGE_SPEC, STORAGE_CLUSTER_KEY) is not None
            reply = await server.http.delete(
                "/api/v1/cluster", params={"name": "demo-running"}, headers=headers
            )
            assert reply.status_code == 200
            deadline = time.monotonic() + TIMEOUT
            while "demo-running" in await _clusters(server, headers):
                assert time.monotonic() < deadline
                await asyncio.sleep(0.005)
        # Seeded once per database: a deleted demo cluster stays deleted, nothing is doubled.
        async with running(tmp_path, demo=True) as server:
            headers = {"authorization": f"Bearer {await server.login()}"}
            await asyncio.sleep(0.05)
            assert set(await _clusters(server, headers)) == {
                "demo-degraded",
                "demo-provisioning",
                "demo-upgrading",
            }

    run(scenario())


def test_without_demo_the_server_starts_empty(tmp_path):
    async def scenario() -> None:
        async with running(tmp_path) as server:
            headers = {"authorization": f"Bearer {await server.login()}"}
            await asyncio.sleep(0.05)
            assert await _clusters(server, headers) == {}

    run(scenario())
