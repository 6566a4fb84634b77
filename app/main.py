"""Assembly: the only module that knows every part. Builds the server from settings and runs it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import math
import multiprocessing
import os
import secrets
import shutil
import signal
import socket
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from datetime import timedelta
from typing import Any

import grpc
import uvicorn
from starlette.types import ASGIApp

from app import __version__
from app.auth.gate import Gate
from app.auth.passwords import PasswordHasher
from app.auth.service import AuthService
from app.auth.tokens import TokenIssuer, load_secret
from app.codegen import portico_openapi
from app.config import ConfigurationError, Settings
from app.gateway.codec import JsonOptions
from app.gateway.connections import head_deadline_protocol
from app.gateway.errors import GatewayError
from app.gateway.open_streams import OpenStreams, shutting_down
from app.gateway.registry import Method, Registry
from app.gateway.routes import GatewayOptions, create_app
from app.grpc_server import create_server, start, stop
from app.idempotency import StoredIdempotency
from app.listeners import PortBusy, claimed_ports, http_socket, reserved_free_port
from app.observe import local, tracing
from app.observe.calls import Telemetry, note_user
from app.observe.exposition import serve_metrics
from app.observe.logs import configure_logging
from app.observe.metrics import (
    EVENT_LOG_EVENTS,
    EVENT_LOG_HEAD,
    LEADER,
    MULTIPROCESS_ENV,
    SWITCH,
)
from app.refusals import Rejected
from app.services.checked import checked_servicers
from app.services.edge.system import edge_system
from app.services.kaas.demo import demo_job
from app.services.kaas.reconciler import ClusterReconciler
from app.services.kaas.service import ClusterService
from app.services.koor.service import StatsService
from app.services.kudo.system import scheduler_system
from app.services.rkt.service import RuntimeService, global_flags
from app.sim.clock import SimClock
from app.sim.machines import FaultInjection, IpPool, SimulatedMachineProvider
from app.store import AlreadyExists, LeaderElection, ObjectStore, make_private_folder
from app.tls import check_tls_files, grpc_credentials, uvicorn_tls

log = logging.getLogger("portico")

BOOTSTRAP_ADMIN = "admin"


class Portico:
    """One server: the store, the gate, every servicer, and both transports over them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.registry = Registry.from_package("gen")
        self.store: ObjectStore | None = None
        self.gate: Gate | None = None
        self.http_app: ASGIApp | None = None  # built by start()
        self.grpc_server: grpc.aio.Server | None = None
        self.grpc_port = 0
        self.servicers: dict[str, object] = {}
        self._background: asyncio.Task[None] | None = None
        # Set on SIGTERM: readiness fails, new calls are refused, open streams end.
        self.shutting_down = False
        self.streams = OpenStreams(settings.stream_heartbeat_seconds)
        self._replica_work: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Open the store, make sure an admin exists, start background work and gRPC."""
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        settings = self.settings
        SWITCH.recording = settings.metrics  # the store's, the gate's and the simulation's
        check_tls_files(settings)
        self.store, self.gate = await open_gate(
            settings,
            compaction_age=timedelta(seconds=settings.event_retention_seconds),
            group_max_members=settings.group_commit_max_transactions,
            group_max_seconds=settings.group_commit_max_seconds,
        )
        servicers, jobs = self._services(self.store, self.gate)
        self.servicers = servicers
        idempotency = self._idempotency(self.store)
        jobs.append(forget_expired_idempotency_keys(idempotency))
        self._background = asyncio.create_task(run_while_leader(self.store, jobs))
        telemetry = Telemetry(metrics=settings.metrics, request_log=settings.request_log)
        if settings.metrics:
            self._replica_work += [
                asyncio.create_task(supervised(job))
                for job in (sample_event_log(self.store), local.flush_every)
            ]
        json_options = JsonOptions(
            proto_names=settings.json_names == "proto",
            ignore_unknown=settings.unknown_fields == "ignore",
        )
        options = GatewayOptions(
            json=json_options,
            max_body_bytes=settings.max_body_bytes,
            body_timeout_seconds=settings.body_timeout_seconds,
            streams=self.streams,
            cors_origins=settings.cors_origins,
            rpc_prefix=settings.rpc_prefix,
            authenticate=self._authenticate,
            idempotency=idempotency,
            openapi=portico_openapi(self.registry, json_options),
            telemetry=telemetry,
            # With a metrics port, /metrics is served there (by the serving process) instead.
            metrics_endpoint=settings.metrics and not settings.metrics_port,
            metrics_token=settings.metrics_token,
        )
        # Both transports call the servicers behind the field rules' checks.
        servicers = checked_servicers(servicers)
        self.http_app = create_app(self.registry, servicers, options, ready=self.store_reachable)
        address = f"{settings.grpc_host}:{settings.grpc_port}"
        try:
            self.grpc_server, self.grpc_port = create_server(
                address,
                self.registry,
                servicers,
                authenticate=self._authenticate,
                shared_port=settings.workers > 1,
                credentials=grpc_credentials(settings),
                strict=settings.unknown_fields == "reject",
                streams=self.streams,
                telemetry=telemetry,
                idempotency=idempotency,
            )
        except RuntimeError:
            raise PortBusy("gRPC", settings.grpc_host, settings.grpc_port) from None
        await start(self.grpc_server)

    def _services(self, store: ObjectStore, gate: Gate) -> tuple[dict[str, object], list[Job]]:
        """Every servicer by full service name, and the background jobs they need."""
        settings = self.settings
        servicers: dict[str, object] = {"services.auth.AuthService": AuthService(gate)}
        jobs: list[Job] = [purge_expired_revocations(store), compact_event_log(store)]

        # KaaS clusters and storage statistics on the simulated infrastructure.
        clock = SimClock(settings.sim_step_seconds)
        ips = IpPool(settings.machine_ip_pool)
        machines = SimulatedMachineProvider(
            ip_pool=ips, faults=FaultInjection(settings.sim_failure_ratio, settings.sim_seed)
        )
        stats = StatsService(store, clock, seed=settings.sim_seed)
        servicers["cnct.kaas.api.Cluster"] = ClusterService(
            store, machines, versions=settings.k8s_versions, machine_capacity=ips.capacity
        )
        servicers["stats.StatsService"] = stats
        jobs.append(ClusterReconciler(store, machines, clock).run)
        if settings.demo:
            jobs.append(
                demo_job(
                    store, machines, clock, settings.k8s_versions, also=[stats.storage_cluster]
                )
            )

        # The container scheduler with simulated nodes and runtime, and the runtime view of its
        # instances.
        scheduler = scheduler_system(store, settings)
        servicers.update(scheduler.servicers)
        servicers["v1alpha.PublicAPI"] = RuntimeService(
            store,
            global_flags(settings.tls),
            settings.sim_step_seconds,
            settings.image_retention_seconds,
        )
        jobs.extend(scheduler.jobs)

        # The edge-cloud controller, its simulated cloudlet resource manager, and this replica's
        # registration as a Controller (kept alive by every replica, not only the leader).
        edge = edge_system(store, settings)
        servicers.update(edge.servicers)
        jobs.extend(edge.jobs)
        self._replica_work = [asyncio.create_task(supervised(job)) for job in edge.replica_jobs]
        return servicers, jobs

    def _idempotency(self, store: ObjectStore) -> StoredIdempotency:
        """The one keeper of idempotency keys both transports call."""
        crash_after = self.settings.test_crash_after_commit
        if crash_after and not any(m.full_name == crash_after for m in self.registry):
            raise ConfigurationError(
                f"PORTICO_TEST_CRASH_AFTER_COMMIT: {crash_after!r} is not a served method"
            )
        return StoredIdempotency(
            store,
            timedelta(seconds=self.settings.idempotency_retention_seconds),
            crash_after_commit=crash_after,
        )

    async def store_reachable(self) -> bool:
        """Readiness: not shutting down, and the store answers a query."""
        if self.store is None or self.shutting_down:
            return False
        return await store_answers(self.store)

    async def _authenticate(
        self, method: Method, metadata: Iterable[tuple[str, str | bytes]]
    ) -> object:
        assert self.gate is not None
        if self.shutting_down:
            raise shutting_down()
        return await admit_caller(self.gate, method, metadata)

    def begin_shutdown(self) -> None:
        """Fail readiness, refuse new calls on both transports, end every open stream with
        UNAVAILABLE; calls in flight may still finish (:meth:`stop` waits for them)."""
        self.shutting_down = True
        self.streams.close_all()

    async def stop(self) -> None:
        """Let in-flight gRPC calls finish, stop background work, then close the store."""
        self.begin_shutdown()
        if self.grpc_server is not None:
            await stop(self.grpc_server, self.settings.shutdown_grace_seconds)
        for task in [*self._replica_work, *([self._background] if self._background else [])]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.store is not None:
            await self.store.close()


async def open_gate(settings: Settings, **store_options: Any) -> tuple[ObjectStore, Gate]:
    """The store with a first admin in it, and the gate over its accounts and tokens."""
    make_private_folder(settings.data_dir)
    issuer = TokenIssuer(
        load_secret(settings.jwt_secret, settings.data_dir),
        ttl_seconds=settings.token_ttl_seconds,
    )
    store = await asyncio.to_thread(
        ObjectStore.open, settings.effective_database_url, **store_options
    )
    try:
        hasher = PasswordHasher(cost=settings.password_hash_cost)
        await bootstrap_admin(store, hasher, settings.admin_password)
    except BaseException:
        await store.close()
        raise
    return store, Gate(store, issuer, hasher, trusted_proxies=settings.trusted_proxies)


async def store_answers(store: ObjectStore) -> bool:
    """Readiness of the store: it answers a query."""
    try:
        await store.current_revision()
    except Exception:  # a probe: whatever the store raises means "not ready"
        log.warning("not ready: the store does not answer", exc_info=True)
        return False
    return True


async def admit_caller(
    gate: Gate, method: Method, metadata: Iterable[tuple[str, str | bytes]]
) -> object:
    """The gate's verdict on a call, a refusal raised as the transports render it."""
    try:
        caller = await gate.admit(method.full_name, metadata)
    except Rejected as rejected:
        headers = [("www-authenticate", rejected.challenge)] if rejected.challenge else []
        raise GatewayError(rejected.code, rejected.message, headers=headers) from None
    if caller is not None:
        note_user(caller.username)
    return caller


# Background work: a coroutine that runs until cancelled, on the leader only.
Job = Callable[[], Awaitable[None]]


async def run_while_leader(store: ObjectStore, jobs: list[Job]) -> None:
    """Run ``jobs`` whenever this process is the leader; stop them when it is deposed."""
    election = LeaderElection(store)
    campaign = asyncio.create_task(election.run())
    try:
        while True:
            await election.wait_elected()
            LEADER.set(1)
            log.info("leader: starting %d background job(s)", len(jobs))
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(supervised(job)) for job in jobs]
                await election.wait_deposed()
                LEADER.set(0)
                log.warning("no longer the leader: stopping background work")
                for task in tasks:
                    task.cancel()
    finally:
        LEADER.set(0)
        campaign.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await campaign


async def supervised(job: Job, restart_delay: float = 1.0) -> None:
    """Run ``job``; if it fails, log the traceback and run it again, so one bug stops nothing."""
    while True:
        try:
            await job()
        except Exception:
            log.exception("background job %s failed; restarting it", getattr(job, "__name__", job))
        await asyncio.sleep(restart_delay)


def purge_expired_revocations(store: ObjectStore, every_seconds: float = 600.0) -> Job:
    """A job that forgets revocations of tokens that have expired anyway, and failed-login
    counts with nothing left to remember."""

    async def purge() -> None:
        while True:
            removed = await store.purge_expired_revocations()
            if removed:
                log.info("forgot %d revocation(s) of expired tokens", removed)
            await store.login_attempts.forget_stale()
            await asyncio.sleep(every_seconds)

    return purge


def forget_expired_idempotency_keys(
    idempotency: StoredIdempotency, every_seconds: float = 600.0
) -> Job:
    """A job that deletes idempotency records past their retention."""

    async def forget() -> None:
        while True:
            removed = await idempotency.forget_expired()
            if removed:
                log.info("forgot %d expired idempotency key(s)", removed)
            await asyncio.sleep(every_seconds)

    return forget


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


def sample_event_log(store: ObjectStore, every_seconds: float = 15.0) -> Job:
    """A job that keeps the event log's size and head revision in the metrics."""

    async def sample() -> None:
        while True:
            kept, head = await store.event_log_size()
            EVENT_LOG_EVENTS.set(kept)
            EVENT_LOG_HEAD.set(head)
            await asyncio.sleep(every_seconds)

    return sample


async def bootstrap_admin(store: ObjectStore, hasher: PasswordHasher, password: str) -> None:
    """On first start (no accounts at all), create ``admin``; never with a built-in password."""
    if await store.list_accounts():
        if password:
            # Said at every start: an operator who set it expects it to work, and it does not.
            log.warning(
                "PORTICO_ADMIN_PASSWORD is ignored: accounts exist already (it only sets the "
                "first admin's password); change a password with "
                "`portico users set-password %s`",
                BOOTSTRAP_ADMIN,
            )
        return
    generated = not password
    password = password or secrets.token_urlsafe(18)
    password_hash = await asyncio.to_thread(hasher.hash, password)
    try:
        await store.create_account(BOOTSTRAP_ADMIN, password_hash, "admin")
    except AlreadyExists:  # another worker of this server got there first
        return
    if generated:
        # Printed once, to the console only: it is never stored or logged anywhere else.
        print(
            f"\nCreated account {BOOTSTRAP_ADMIN!r} with password {password}\n"
            "Keep it now: it will not be shown again.\n",
            flush=True,
        )


async def run(settings: Settings) -> None:
    """Serve REST/JSON and gRPC until SIGINT/SIGTERM, then stop both gracefully."""
    try:
        tracing.configure_from_environment()
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    portico = Portico(settings)
    await portico.start()
    # Everything built so far lives as long as the server: keep it out of the collector's way,
    # so full collections stay short instead of pausing every request behind them.
    gc.collect()
    gc.freeze()
    if portico.http_app is None:
        raise RuntimeError("start() did not build the HTTP app")
    http_server = uvicorn.Server(http_config(settings, portico.http_app))
    loop = asyncio.get_running_loop()

    def shut_down() -> None:
        # Streams end first (uvicorn would wait for them without end), then both servers stop
        # taking calls; uvicorn and gRPC each give calls in flight the grace period.
        portico.begin_shutdown()
        http_server.should_exit = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, shut_down)
    try:
        listener = http_socket(settings.http_host, settings.http_port, shared=settings.workers > 1)
        # The ports bound, not the ones asked for: port 0 means "any free one".
        scheme = "https" if settings.tls else "http"
        http_base = f"{scheme}://{_url_host(settings.http_host)}:{listener.getsockname()[1]}"
        log.info(
            "portico %s: gRPC on %s:%d, REST/JSON on %s (dashboard: %s/dashboard/)",
            __version__,
            _url_host(settings.grpc_host),
            portico.grpc_port,
            http_base,
            http_base,
        )
        await http_server.serve(sockets=[listener])
    finally:
        await portico.stop()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def http_config(settings: Settings, app: Any) -> uvicorn.Config:
    """How uvicorn serves the REST/JSON side: the limits on slow and oversized clients."""
    return uvicorn.Config(
        app,
        log_level="info",
        log_config=None,  # the format configure_logging chose, secrets masked
        access_log=settings.access_log,
        # Portico is the origin server; forwarded headers are not trusted unless asked for.
        proxy_headers=False,
        server_header=False,
        http=head_deadline_protocol(settings.header_timeout_seconds),
        # Every WebSocket frame is a request message: the body limit holds for each.
        ws_max_size=settings.max_body_bytes,
        timeout_graceful_shutdown=math.ceil(settings.shutdown_grace_seconds),
        **uvicorn_tls(settings),
    )


def _worker(settings: Settings) -> None:
    configure_logging(settings.log_format)
    with contextlib.suppress(KeyboardInterrupt):
        run_event_loop(run(settings))


def run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop (uvicorn's fast loop, installed with it) or else asyncio's own."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn[standard] brings it
        asyncio.run(main)
    else:
        uvloop.run(main)


def run_workers(settings: Settings) -> None:
    """Run ``settings.workers`` server processes on the same ports; stop them all on a signal."""
    context = multiprocessing.get_context("spawn")  # grpc must not be forked once started
    settings, reserved = _pick_free_ports(settings)
    metrics_dir = _multiprocess_metrics(settings)
    workers = [context.Process(target=_worker, args=(settings,)) for _ in range(settings.workers)]
    for process in workers:
        process.start()

    def stop_all(signum: int, frame: object) -> None:
        for process in workers:
            if process.is_alive():
                process.terminate()

    signal.signal(signal.SIGTERM, stop_all)
    signal.signal(signal.SIGINT, stop_all)
    for process in workers:
        process.join()
        if metrics_dir is not None and process.pid is not None:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(process.pid, metrics_dir)
    for sock in reserved:
        sock.close()


def _pick_free_ports(settings: Settings) -> tuple[Settings, list[socket.socket]]:
    """Every worker must bind the same ports: a port 0 ("any free one") is picked here once,
    and held until the workers, which bind it too, are gone."""
    reserved: list[socket.socket] = []
    ports = {}
    for name, host in (("http_port", settings.http_host), ("grpc_port", settings.grpc_host)):
        if getattr(settings, name) == 0:
            reserved.append(reserved_free_port(host))
            ports[name] = reserved[-1].getsockname()[1]
    return dataclasses.replace(settings, **ports), reserved


def _multiprocess_metrics(settings: Settings) -> str | None:
    """With metrics on, a fresh folder where every worker keeps its numbers, named in the
    environment the workers inherit, so that a scrape of any one of them adds up all."""
    if not settings.metrics:
        return None
    given = os.environ.get(MULTIPROCESS_ENV)
    if given:
        return given  # the operator's own folder (they clear it between runs)
    folder = settings.data_dir / "metrics"
    shutil.rmtree(folder, ignore_errors=True)  # numbers of an earlier run would add up too
    make_private_folder(folder)
    os.environ[MULTIPROCESS_ENV] = str(folder)
    return str(folder)


def serve(settings: Settings) -> None:
    """Entry point of ``portico serve``."""
    configure_logging(settings.log_format)
    try:
        check_tls_files(settings)
        with claimed_ports(settings):
            if settings.metrics_port:
                try:
                    _, port = serve_metrics(
                        settings.http_host, settings.metrics_port, settings.metrics_token
                    )
                except OSError:
                    raise PortBusy("metrics", settings.http_host, settings.metrics_port) from None
                log.info("metrics on http://%s:%d/metrics", settings.http_host, port)
            if settings.workers > 1:
                run_workers(settings)
            else:
                run_event_loop(run(settings))
    except ConfigurationError as exc:
        raise SystemExit(f"portico: {exc}") from None
