"""What the KaaS tests share: a CreateCluster body as a curl user writes it, and the REST side of
one server with an admin token."""

from __future__ import annotations

from typing import Any

from tests.harness import Running, eventually

TIMEOUT = 10.0


def cluster_body(
    name: str = "prod", version: str = "1.31.2", planes: int = 1, **pools: int
) -> dict:
    """A CreateCluster JSON body, as a curl user writes it."""
    pools = pools or {"workers": 2}
    return {
        "name": name,
        "k8s_version": version,
        "control_plane_nodes": {"count": planes, "instanceType": "standard"},
        "worker_node_pools": [
            {
                "name": pool,
                "instanceType": "standard",
                "count": count,
                "labels": [{"name": "example.com/pool", "value": pool}],
            }
            for pool, count in pools.items()
        ],
    }


class Rest:
    """The REST side of one server, with an admin token."""

    def __init__(self, server: Running, token: str) -> None:
        self.http = server.http
        self.headers = {"authorization": f"Bearer {token}"}

    async def call(self, verb: str, path: str, **kwargs: Any) -> tuple[int, dict]:
        reply = await self.http.request(verb, path, headers=self.headers, **kwargs)
        return reply.status_code, reply.json()

    async def cluster(self, name: str) -> dict:
        status, body = await self.call("GET", "/api/v1/cluster", params={"name": name})
        assert status == 200, body
        return body["cluster"]

    async def wait_for(self, name: str, state: str, timeout: float = TIMEOUT) -> dict:
        """Poll GetCluster until the cluster is in ``state``."""

        async def reached() -> dict | None:
            cluster = await self.cluster(name)
            return cluster if cluster["status"] == state else None

        return await eventually(reached, timeout, what=f"cluster {name} {state}")

    async def nodes(self, name: str) -> dict:
        status, body = await self.call(
            "GET", "/api/v1/cluster/nodesstatus", params={"clusterName": name}
        )
        assert status == 200, body
        return body


async def rest_api(server: Running) -> Rest:
    return Rest(server, await server.login())
