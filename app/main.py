"""Assembly: the only module that knows every part. Builds the server from settings and runs it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import signal
from collections.abc import Awaitable, Callable, Iterable
from datetime import timedelta

import grpc
import uvicorn
from fastapi import FastAPI

from app.auth.gate import Gate, Refused
from app.auth.passwords import PasswordHasher
from app.auth.service import AuthService
from app.auth.throttle import LoginThrottle
from app.auth.tokens import TokenIssuer, load_secret
from app.codegen import portico_openapi
from app.config import ConfigurationError, Settings
from app.gateway.codec import JsonOptions
from app.gateway.errors import GatewayError
from app.gateway.registry import Method, Registry
from app.gateway.routes import GatewayOptions, create_app
from app.grpc_server import create_server, start, stop
from app.store import LeaderElection, ObjectStore

log = logging.getLogger("portico")

SHUTDOWN_GRACE_SECONDS = 5.0
BOOTSTRAP_ADMIN = "admin"


class Portico:
    """One server: the store, the gate, every servicer, and both transports over them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.registry = Registry.from_package("gen")
        self.store: ObjectStore | None = None
        self.gate: Gate | None = None
        self.http_app: FastAPI | None = None
        self.grpc_server: grpc.aio.Server | None = None
        self.grpc_port = 0
        self.servicers: dict[str, object] = {}
        self._background: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Open the store, make sure an admin exists, start background work and gRPC."""
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        settings = self.settings
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        issuer = TokenIssuer(
            load_secret(settings.jwt_secret, settings.data_dir),
            ttl_seconds=settings.token_ttl_seconds,
        )
        self.store = await asyncio.to_thread(
            ObjectStore.open,
            settings.effective_database_url,
            compaction_age=timedelta(seconds=settings.event_retention_seconds),
        )
        hasher = PasswordHasher(cost=settings.password_hash_cost)
        await bootstrap_admin(self.store, hasher, settings.admin_password)
        self.gate = Gate(self.store, issuer, hasher, LoginThrottle())
        servicers, jobs = self._services(self.store, self.gate)
        self.servicers = servicers
        self._background = asyncio.create_task(run_while_leader(self.store, jobs))
        json_options = JsonOptions(
            proto_names=settings.json_names == "proto",
            ignore_unknown=settings.unknown_fields == "ignore",
        )
        options = GatewayOptions(
            json=json_options,
            max_body_bytes=settings.max_body_bytes,
            cors_origins=settings.cors_origins,
            authenticate=self._authenticate,
            openapi=portico_openapi(self.registry, json_options),
        )
        self.http_app = create_app(self.registry, servicers, options, ready=self.store_reachable)
        address = f"{settings.grpc_host}:{settings.grpc_port}"
        self.grpc_server, self.grpc_port = create_server(
            address, self.registry, servicers, authenticate=self._authenticate
        )
        await start(self.grpc_server)

    def _services(self, store: ObjectStore, gate: Gate) -> tuple[dict[str, object], list[Job]]:
        """Every servicer by full service name, and the background jobs they need."""
        servicers: dict[str, object] = {"services.auth.AuthService": AuthService(gate)}
        jobs: list[Job] = [purge_expired_revocations(store), compact_event_log(store)]
        return servicers, jobs

    async def store_reachable(self) -> bool:
        """Readiness: the store answers a query."""
        if self.store is None:
            return False
        try:
            await self.store.current_revision()
        except Exception:  # a probe: whatever the store raises means "not ready"
            log.warning("not ready: the store does not answer", exc_info=True)
            return False
        return True

    async def _authenticate(
        self, method: Method, metadata: Iterable[tuple[str, str | bytes]]
    ) -> object:
        assert self.gate is not None
        try:
            return await self.gate.admit(method.full_name, metadata)
        except Refused as refused:
            headers = [("www-authenticate", refused.challenge)] if refused.challenge else []
            raise GatewayError(refused.code, refused.message, headers=headers) from None

    async def stop(self) -> None:
        """Let in-flight gRPC calls finish, stop background work, then close the store."""
        if self.grpc_server is not None:
            await stop(self.grpc_server, SHUTDOWN_GRACE_SECONDS)
        if self._background is not None:
            self._background.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._background
        if self.store is not None:
            await self.store.close()


# Background work: a coroutine that runs until cancelled, on the leader only.
Job = Callable[[], Awaitable[None]]


async def run_while_leader(store: ObjectStore, jobs: list[Job]) -> None:
    """Run ``jobs`` whenever this process is the leader; stop them when it is deposed."""
    election = LeaderElection(store)
    campaign = asyncio.create_task(election.run())
    try:
        while True:
            await election.wait_elected()
            log.info("leader: starting %d background job(s)", len(jobs))
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(_supervised(job)) for job in jobs]
                await election.wait_deposed()
                log.warning("no longer the leader: stopping background work")
                for task in tasks:
                    task.cancel()
    finally:
        campaign.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await campaign


async def _supervised(job: Job, restart_delay: float = 1.0) -> None:
    """Run ``job``; if it fails, log the traceback and run it again, so one bug stops nothing."""
    while True:
        try:
            await job()
        except Exception:
            log.exception("background job %s failed; restarting it", getattr(job, "__name__", job))
        await asyncio.sleep(restart_delay)


def purge_expired_revocations(store: ObjectStore, every_seconds: float = 600.0) -> Job:
    """A job that forgets revocations of tokens that have expired anyway."""

    async def purge() -> None:
        while True:
            removed = await store.purge_expired_revocations()
            if removed:
                log.info("forgot %d revocation(s) of expired tokens", removed)
            await asyncio.sleep(every_seconds)

    return purge


def compact_event_log(store: ObjectStore, every_seconds: float = 3600.0) -> Job:
    """A job that drops events older than the retention (watches from before get OUT_OF_RANGE)."""

    async def compact() -> None:
        through = 0
        while True:
            now_through = await store.compact()
            if now_through != through:
                log.info("event log compacted through revision %d", now_through)
                through = now_through
            await asyncio.sleep(every_seconds)

    return compact


async def bootstrap_admin(store: ObjectStore, hasher: PasswordHasher, password: str) -> None:
    """On first start (no accounts at all), create ``admin``; never with a built-in password."""
    if await store.list_accounts():
        return
    generated = not password
    password = password or secrets.token_urlsafe(18)
    password_hash = await asyncio.to_thread(hasher.hash, password)
    await store.create_account(BOOTSTRAP_ADMIN, password_hash, "admin")
    if generated:
        # Printed once, to the console only: it is never stored or logged anywhere else.
        print(
            f"\nCreated account {BOOTSTRAP_ADMIN!r} with password {password}\n"
            "Keep it now: it will not be shown again.\n",
            flush=True,
        )


async def run(settings: Settings) -> None:
    """Serve REST/JSON and gRPC until SIGINT/SIGTERM, then stop both gracefully."""
    portico = Portico(settings)
    await portico.start()
    config = uvicorn.Config(
        portico.http_app, host=settings.http_host, port=settings.http_port, log_level="info"
    )
    http_server = uvicorn.Server(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, lambda: setattr(http_server, "should_exit", True))
    log.info(
        "gRPC on %s:%d, REST/JSON on http://%s:%d",
        settings.grpc_host,
        portico.grpc_port,
        settings.http_host,
        settings.http_port,
    )
    try:
        await http_server.serve()
    finally:
        await portico.stop()


def serve(settings: Settings) -> None:
    """Entry point of ``portico serve``."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        asyncio.run(run(settings))
    except ConfigurationError as exc:
        raise SystemExit(f"portico: {exc}") from None
