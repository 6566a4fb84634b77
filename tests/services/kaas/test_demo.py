"""``portico serve --demo``: clusters in several states at once, seeded once per database."""

from __future__ import annotations

import yaml

from app.services.koor.service import STORAGE_CLUSTER_KEY, STORAGE_SPEC
from app.services.kudo.records import NODE
from app.services.kudo.simulated_nodes import simulated_node_name
from tests.harness import Running, eventually, run, running

TIMEOUT = 10.0


async def _clusters(server: Running, headers: dict[str, str]) -> dict[str, dict]:
    reply = await server.http.get("/api/v1/cluster/list", headers=headers)
    return {c["name"]: c for c in reply.json()["clusters"]}


async def _wait(server: Running, headers: dict[str, str], want: dict[str, str]) -> dict:
    async def reached() -> dict | None:
        clusters = await _clusters(server, headers)
        if all(clusters.get(name, {}).get("status") == state for name, state in want.items()):
            return clusters
        return None

    return await eventually(reached, TIMEOUT, what=f"clusters in states {want}")


async def _storage_spec_stored(server: Running) -> bool:
    assert server.portico.store is not None
    return await server.portico.store.get(STORAGE_SPEC, STORAGE_CLUSTER_KEY) is not None


async def _sim_node_registered(server: Running) -> bool:
    assert server.portico.store is not None
    return await server.portico.store.get(NODE, simulated_node_name(1)) is not None


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

            async def deleted() -> bool:
                return "demo-running" not in await _clusters(server, headers)

            await eventually(deleted, TIMEOUT, what="demo-running deleted")
            # The demo job re-creates the storage cluster after its (once per database) seeding
            # step: its return on the next start says that step has run.
            await server.portico.store.delete(STORAGE_SPEC, STORAGE_CLUSTER_KEY)
        # Seeded once per database: a deleted demo cluster stays deleted, nothing is doubled.
        async with running(tmp_path, demo=True) as server:
            headers = {"authorization": f"Bearer {await server.login()}"}
            await eventually(
                lambda: _storage_spec_stored(server),
                TIMEOUT,
                what="the demo job past its seeding step",
            )
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
            # The leader's background jobs run (a simulated node registered), and none seeds.
            await eventually(
                lambda: _sim_node_registered(server), TIMEOUT, what="the background jobs running"
            )
            assert await _clusters(server, headers) == {}

    run(scenario())
