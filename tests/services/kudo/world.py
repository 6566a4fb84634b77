"""A small scheduler world for end-to-end tests: nodes, node agents, status feeds and waiting."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypeVar

import grpc

from app.services.kudo.certificates import self_signed
from app.services.kudo.records import INSTANCE, NODE, InstanceRecord, NodeRecord
from gen.scheduler import scheduler_pb2 as pb
from gen.scheduler import scheduler_pb2_grpc as pb_grpc
from tests.harness import Running, eventually

T = TypeVar("T")
NGINX = "docker://nginx:1.25"
ETCD = "quay.io/coreos/etcd:v3.5"
ROOT = Path(__file__).resolve().parents[3]


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def headers(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def certificate(name: str) -> str:
    return self_signed(name)[0]


def instance(name: str, cpu: int = 1, memory: int = 128, disk: int = 1, **fields: Any):
    """An Instance for Create."""
    return pb.Instance(
        name=name,
        uri=fields.pop("uri", "docker://nginx:1.25"),
        resource=pb.Resource(limit=pb.ResourceSummary(cpu=cpu, memory=memory, disk=disk)),
        **fields,
    )


async def stored_instance(server: Running, instance_id: str) -> InstanceRecord:
    assert server.portico.store is not None
    record = await server.portico.store.get(INSTANCE, instance_id)
    assert record is not None
    return InstanceRecord.from_bytes(record.data)


async def stored_node(server: Running, node_id: str) -> NodeRecord | None:
    assert server.portico.store is not None
    record = await server.portico.store.get(NODE, node_id)
    return None if record is None else NodeRecord.from_bytes(record.data)


async def wait_status(server: Running, instance_id: str, status: int) -> InstanceRecord:
    async def reached() -> InstanceRecord | None:
        current = await stored_instance(server, instance_id)
        return current if current.status == status else None

    return await eventually(reached, what=f"instance {instance_id} {pb.Status.Name(status)}")


class StatusFeed:
    """A node's Status stream over real gRPC, reporting until stopped or killed."""

    def __init__(self, channel: grpc.aio.Channel, token: str, node: str, limit: pb.ResourceSummary):
        self.node = node
        self.limit = limit
        self.status = pb.RUNNING  # what it reports from now on (a test may change it)
        self._stop = asyncio.Event()
        stub = pb_grpc.NodeServiceStub(channel)
        self.call = stub.Status(self._reports(), metadata=bearer(token))

    async def _reports(self) -> AsyncIterator[pb.NodeStatus]:
        while not self._stop.is_set():
            yield pb.NodeStatus(
                id=self.node, status=self.status, resource=pb.Resource(limit=self.limit)
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), 0.02)

    def kill(self) -> None:
        """Drop the stream abruptly, like a node that crashed."""
        self.call.cancel()

    async def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.CancelledError):
            await self.call


@contextlib.asynccontextmanager
async def status_feed(
    server: Running, token: str, node: str, cpu: int, memory: int, disk: int
) -> AsyncIterator[StatusFeed]:
    """Register ``node`` over gRPC and stream its status until the block ends."""
    stub = pb_grpc.NodeServiceStub(server.channel)
    await stub.Register(
        pb.NodeRegisterRequest(certificate=certificate(node)), metadata=bearer(token)
    )
    feed = StatusFeed(
        server.channel, token, node, pb.ResourceSummary(cpu=cpu, memory=memory, disk=disk)
    )
    try:
        await eventually(lambda: _healthy(server, node), what=f"node {node} healthy")
        yield feed
    finally:
        if not feed.call.done():
            feed.kill()
        await feed.close()


async def _healthy(server: Running, node: str) -> bool:
    record = await stored_node(server, node)
    return record is not None and record.healthy


@contextlib.asynccontextmanager
async def node_agent(
    server: Running, cert_dir: Path, name: str, cpu: int, memory: int, disk: int
) -> AsyncIterator[asyncio.subprocess.Process]:
    """The real ``portico node-agent`` in a subprocess, against the server's gRPC port."""
    # A node account speaks for the node named like it.
    await server.add_account(name, "node", password="agent-password")
    env = {
        **os.environ,
        "PORTICO_NODE_USERNAME": name,
        "PORTICO_NODE_PASSWORD": "agent-password",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app",
        "node-agent",
        f"--name={name}",
        f"--cpu={cpu}",
        f"--memory={memory}",
        f"--disk={disk}",
        f"--server=127.0.0.1:{server.portico.grpc_port}",
        f"--cert-dir={cert_dir}",
        "--interval=0.02",
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await eventually(lambda: _healthy(server, name), timeout=20, what=f"node {name} healthy")
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.communicate()


def open_streams(server: Running) -> int:
    """Streams the scheduler and runtime servicers are serving right now."""
    names = ("scheduler.NodeService", "scheduler.InstanceService", "v1alpha.PublicAPI")
    return sum(server.portico.servicers[name].open_streams for name in names)  # type: ignore[attr-defined]


async def running_instance(server: Running, token: str, name: str, uri: str, cpu: int = 1) -> str:
    """Create an instance and return its id once it runs (or is pending, if it cannot fit)."""
    stub = pb_grpc.InstanceServiceStub(server.channel)
    call = stub.Create(instance(name, cpu=cpu, uri=uri), metadata=bearer(token))
    first = await anext(call.__aiter__())
    call.cancel()
    if cpu <= 8:
        await wait_status(server, first.id, pb.RUNNING)
    return first.id
