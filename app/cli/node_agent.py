"""``portico node-agent``: a scheduler node that registers and streams its status over gRPC.

The agent keeps a self-signed certificate (CN = the node name) in ``--cert-dir`` (by default
``node-certs`` in the data folder, outside any checkout; created with mode 0700 on first run,
reused after), logs in with a ``node`` account, registers, and reports its capacity every
``--interval`` seconds until interrupted; then it ends its stream, and the scheduler gives it
the grace period to come back. If the server goes away it reconnects with backoff.

It runs no containers itself (the server's simulated runtime moves its instances), but it learns
them as a real agent would, through the runtime API: its node's running pods (``ListPods``
filtered by the ``scheduler/node`` annotation; a node account sees only its own anyway), listed
again on every runtime event (``ListenEvents``) and before every report. Each report's usage is
the sum of what those pods use at that moment (:mod:`app.sim.usage`, seeded and varying over time
within each pod's ``scheduler/limit``), so the node's resource summary matches its instances.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from app.services.kudo.certificates import self_signed
from app.services.names import dns_label_problem
from app.settings.config import Settings
from app.sim.usage import usage_at
from gen.scheduler import scheduler_pb2 as pb
from gen.scheduler import scheduler_pb2_grpc as pb_grpc
from gen.services.auth import auth_pb2, auth_pb2_grpc
from gen.v1alpha import api_pb2 as rkt
from gen.v1alpha import api_pb2_grpc as rkt_grpc

Metadata = tuple[tuple[str, str], ...]

RETRY_CODES = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}
MAX_BACKOFF_SECONDS = 5.0
# What the scheduler's ResourceSummary numbers mean (its simulated nodes use the same).
RESOURCE_UNITS = {"cpu": "cores", "memory": "MiB", "disk": "GiB"}


@dataclass(frozen=True)
class AgentOptions:
    """Everything the agent runs with."""

    name: str
    cpu: int
    memory: int
    disk: int
    server: str
    username: str
    password: str
    cert_dir: Path
    interval: float
    # TLS: the CA that signed the server's certificate, and a client certificate with its key
    # (for a server started with --tls-client-ca). None of them: plaintext gRPC.
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""


def add_node_agent_command(commands: Any) -> None:
    """Add ``node-agent`` to the ``portico`` sub-commands."""
    agent = commands.add_parser(
        "node-agent", help="run a scheduler node that registers and streams its status"
    )
    agent.add_argument(
        "--name",
        default="",
        help="node id, a DNS label and the certificate's CN (default: the account name; a node "
        "account may act only for the node named like it)",
    )
    for resource, unit in RESOURCE_UNITS.items():
        agent.add_argument(
            f"--{resource}", type=int, required=True, help=f"the node's {resource}, in {unit}"
        )
    agent.add_argument(
        "--server",
        default=os.environ.get("PORTICO_NODE_SERVER", "127.0.0.1:50051"),
        help="scheduler gRPC address host:port (PORTICO_NODE_SERVER, default: 127.0.0.1:50051)",
    )
    agent.add_argument(
        "--username",
        default=os.environ.get("PORTICO_NODE_USERNAME", ""),
        help="a 'node' account (PORTICO_NODE_USERNAME)",
    )
    agent.add_argument(
        "--password",
        default=os.environ.get("PORTICO_NODE_PASSWORD", ""),
        help="its password (PORTICO_NODE_PASSWORD; prefer the variable)",
    )
    agent.add_argument(
        "--cert-dir",
        type=Path,
        default=default_cert_dir(os.environ),
        help="folder of <name>.crt/<name>.key, created if missing with mode 0700 "
        "($PORTICO_NODE_CERT_DIR, default: node-certs in the data folder, $PORTICO_DATA_DIR or "
        "./data)",
    )
    agent.add_argument(
        "--interval", type=float, default=5.0, help="seconds between status reports (default: 5)"
    )
    for flag, variable, text in (
        ("--tls-ca", "PORTICO_NODE_TLS_CA", "PEM CA of the server's certificate: connect with TLS"),
        ("--tls-cert", "PORTICO_NODE_TLS_CERT", "PEM client certificate for the server's CA"),
        ("--tls-key", "PORTICO_NODE_TLS_KEY", "PEM key of --tls-cert"),
    ):
        agent.add_argument(flag, default=os.environ.get(variable, ""), help=f"{text} ({variable})")
    agent.set_defaults(run=run_node_agent)


def default_cert_dir(environ: Mapping[str, str]) -> Path:
    """``node-certs`` in the state folder: the agent's key never lands in the working tree."""
    if cert_dir := environ.get("PORTICO_NODE_CERT_DIR"):
        return Path(cert_dir)
    return Path(environ.get("PORTICO_DATA_DIR") or Settings.data_dir) / "node-certs"


def options_from(args: argparse.Namespace) -> AgentOptions:
    """Checked options; SystemExit naming the flag that is wrong."""
    problems = []
    name = args.name or args.username
    if problem := dns_label_problem(name):
        problems.append(f"--name: {problem}")
    for resource in ("cpu", "memory", "disk"):
        if getattr(args, resource) <= 0:
            problems.append(f"--{resource}: must be greater than 0")
    if not args.username or not args.password:
        problems.append("--username and --password (or PORTICO_NODE_USERNAME/_PASSWORD) needed")
    if not args.interval > 0:
        problems.append("--interval: must be greater than 0")
    if bool(args.tls_cert) != bool(args.tls_key):
        problems.append("--tls-cert and --tls-key: give both or neither")
    for flag in ("tls_ca", "tls_cert", "tls_key"):
        path = getattr(args, flag)
        if path and not os.access(path, os.R_OK):
            problems.append(f"--{flag.replace('_', '-')}: cannot read {path}")
    if problems:
        raise SystemExit("portico node-agent: " + "; ".join(problems))
    return AgentOptions(
        name,
        args.cpu,
        args.memory,
        args.disk,
        args.server,
        args.username,
        args.password,
        args.cert_dir,
        args.interval,
        args.tls_ca,
        args.tls_cert,
        args.tls_key,
    )


def first_certificate(chain: str) -> str:
    """The leaf of a PEM chain (``--tls-cert`` may hold its intermediates after it)."""
    end = "-----END CERTIFICATE-----"
    return chain[: chain.index(end) + len(end)] + "\n" if end in chain else chain


def load_or_create_certificate(cert_dir: Path, name: str) -> str:
    """The node's certificate PEM from ``cert_dir``; a new self-signed one the first time."""
    cert_path, key_path = cert_dir / f"{name}.crt", cert_dir / f"{name}.key"
    if cert_path.exists():
        return cert_path.read_text()
    cert, key = self_signed(name)
    cert_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    cert_dir.chmod(0o700)  # a folder that already existed may have been open to others
    # The key is written owner-only before it holds anything.
    key_path.touch(mode=0o600, exist_ok=True)
    key_path.write_text(key)
    cert_path.write_text(cert)
    return cert


def _limit(pod: rkt.Pod) -> tuple[int, int, int]:
    """The pod's limits from its ``scheduler/limit`` annotation (``cpu=1 memory=128 disk=1``)."""
    for annotation in pod.annotations:
        if annotation.Key == "scheduler/limit":
            values = dict(part.split("=", 1) for part in annotation.value.split() if "=" in part)
            with contextlib.suppress(KeyError, ValueError):
                return int(values["cpu"]), int(values["memory"]), int(values["disk"])
    return 0, 0, 0


class NodePods:
    """The node's running pods as the runtime API shows them, kept current."""

    def __init__(self, node: str, runtime: rkt_grpc.PublicAPIStub, metadata: Metadata) -> None:
        self.node = node
        self.runtime = runtime
        self.metadata = metadata
        self.running: dict[str, tuple[int, int, int]] = {}

    async def refresh(self) -> None:
        """List the node's running pods again."""
        mine = rkt.PodFilter(
            annotations=[rkt.KeyValue(Key="scheduler/node", value=self.node)],
            states=[rkt.POD_STATE_RUNNING],
        )
        reply = await self.runtime.ListPods(
            rkt.ListPodsRequest(filters=[mine]), metadata=self.metadata
        )
        self.running = {pod.id: _limit(pod) for pod in reply.pods}

    async def follow(self, stop: asyncio.Event) -> None:
        """Refresh on every runtime event until ``stop``; a broken stream is opened again."""
        while not stop.is_set():
            try:
                await self.refresh()
                events = self.runtime.ListenEvents(
                    rkt.ListenEventsRequest(filter=rkt.EventFilter()), metadata=self.metadata
                )
                async for _ in events:
                    await self.refresh()
            except grpc.aio.AioRpcError as error:
                if error.code() not in RETRY_CODES:
                    raise
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)

    def usage(self, at_seconds: float) -> pb.ResourceSummary:
        """What the running pods use at ``at_seconds``."""
        total = [0, 0, 0]
        for pod_id, limit in self.running.items():
            for i, used in enumerate(usage_at(pod_id, limit, at_seconds)):
                total[i] += used
        return pb.ResourceSummary(cpu=total[0], memory=total[1], disk=total[2])


def _report(options: AgentOptions, usage: pb.ResourceSummary) -> pb.NodeStatus:
    return pb.NodeStatus(
        id=options.name,
        status=pb.RUNNING,
        statusDescription="node agent reporting",
        resource=pb.Resource(
            limit=pb.ResourceSummary(cpu=options.cpu, memory=options.memory, disk=options.disk),
            usage=usage,
        ),
    )


async def _reports(
    options: AgentOptions, pods: NodePods, stop: asyncio.Event
) -> AsyncIterator[pb.NodeStatus]:
    while not stop.is_set():
        with contextlib.suppress(grpc.aio.AioRpcError):
            await pods.refresh()  # events may have been missed while the stream reconnected
        yield _report(options, pods.usage(time.time()))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), options.interval)


def open_channel(options: AgentOptions) -> grpc.aio.Channel:
    """A channel to the server: TLS when a CA or a client certificate is given."""
    if not (options.tls_ca or options.tls_cert):
        return grpc.aio.insecure_channel(options.server)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=Path(options.tls_ca).read_bytes() if options.tls_ca else None,
        private_key=Path(options.tls_key).read_bytes() if options.tls_key else None,
        certificate_chain=Path(options.tls_cert).read_bytes() if options.tls_cert else None,
    )
    return grpc.aio.secure_channel(options.server, credentials)


async def serve_node(options: AgentOptions, certificate: str, stop: asyncio.Event) -> None:
    """One session: log in, register, stream status until ``stop`` is set."""
    async with open_channel(options) as channel:
        login = await auth_pb2_grpc.AuthServiceStub(channel).Login(
            auth_pb2.LoginRequest(username=options.username, password=options.password)
        )
        metadata = (("authorization", f"Bearer {login.token}"),)
        nodes = pb_grpc.NodeServiceStub(channel)
        reply = await nodes.Register(
            pb.NodeRegisterRequest(certificate=certificate), metadata=metadata
        )
        print(f"node {options.name}: {reply.description}", flush=True)
        pods = NodePods(options.name, rkt_grpc.PublicAPIStub(channel), metadata)
        following = asyncio.create_task(pods.follow(stop))
        try:
            await nodes.Status(_reports(options, pods, stop), metadata=metadata)
        finally:
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                await following


async def run_agent(options: AgentOptions, stop: asyncio.Event) -> None:
    """Serve the node until ``stop`` is set, reconnecting when the server is unreachable."""
    # With a TLS client certificate the node is what that certificate says (its CN): the same
    # identity on the connection and in Register. Without one, a self-signed certificate of its own.
    if options.tls_cert:
        certificate = first_certificate(Path(options.tls_cert).read_text())
    else:
        certificate = load_or_create_certificate(options.cert_dir, options.name)
    backoff = 0.1
    while not stop.is_set():
        try:
            await serve_node(options, certificate, stop)
            backoff = 0.1
        except grpc.aio.AioRpcError as error:
            if error.code() not in RETRY_CODES:
                raise SystemExit(
                    f"portico node-agent: {error.code().name}: {error.details()}"
                ) from None
            print(f"node {options.name}: server unreachable; retrying", file=sys.stderr)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)


async def _main(options: AgentOptions) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await run_agent(options, stop)


def run_node_agent(args: argparse.Namespace) -> None:
    """Entry point of ``portico node-agent``."""
    asyncio.run(_main(options_from(args)))
