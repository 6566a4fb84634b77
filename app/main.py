"""Assembly: the only module that knows every part. Builds the server from settings
(:mod:`app.server.serving` runs it, :mod:`app.server.jobs` is its background work)."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
import os
import secrets
from collections.abc import Awaitable, Iterable, Iterator
from datetime import timedelta
from typing import Any

import grpc
from sqlalchemy.engine import make_url
from starlette.types import ASGIApp

from app.auth.gate import Gate
from app.auth.passwords import PasswordHasher
from app.auth.rate_limit import limiter_for
from app.auth.service import AuthService
from app.auth.tokens import TokenIssuer, load_secret
from app.calls.refusals import Rejected
from app.cli.codegen import DESCRIPTOR_SET, GEN, portico_openapi
from app.gateway import done
from app.gateway.codec.json_mapping import JsonOptions
from app.gateway.errors import GatewayError
from app.gateway.open_streams import OpenStreams, shutting_down
from app.gateway.options import Peer
from app.gateway.registry import Method, Registry
from app.gateway.routes import GatewayOptions, create_app
from app.grpc_server.server import create_server, start, stop
from app.grpc_server.standard import StandardServices
from app.observe import local
from app.observe.calls import Telemetry, note_user
from app.observe.metrics import (
    SWITCH,
)
from app.server.idempotency import StoredIdempotency
from app.server.jobs import (
    Job,
    compact_event_log,
    forget_expired_idempotency_keys,
    purge_expired_revocations,
    run_while_leader,
    sample_event_log,
    supervised,
)
from app.server.listeners import PortBusy
from app.server.tls import check_tls_files, grpc_credentials
from app.services.checked import checked_servicers
from app.services.edge.system import edge_system
from app.services.kaas.demo import demo_job
from app.services.kaas.reconciler import ClusterReconciler
from app.services.kaas.service import ClusterService
from app.services.koor.service import StatsService
from app.services.kudo.system import scheduler_system
from app.services.rkt.service import RuntimeService, global_flags
from app.settings.config import ConfigurationError, Settings
from app.sim.clock import SimClock
from app.sim.machines import FaultInjection, IpPool, SimulatedMachineProvider
from app.store import AlreadyExists, ObjectStore, Unavailable, make_private_folder

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
        self._grpc_drained: asyncio.Future[None] | None = None
        self.standard = StandardServices(service.full_name for service in self.registry.services)

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
        check_rate_limited_methods(settings, self.registry)
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
        self._background = asyncio.create_task(
            run_while_leader(self.store, jobs, lambda: self.shutting_down)
        )
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
        options = gateway_options(
            settings,
            json=json_options,
            streams=self.streams,
            authenticate=self._authenticate,
            idempotency=idempotency,
            openapi=portico_openapi(self.registry, json_options),
            descriptor_sets=(GEN / DESCRIPTOR_SET).read_bytes(),
            telemetry=telemetry,
        )
        # Both transports call the servicers behind the field rules' checks.
        servicers = checked_servicers(servicers)
        # gRPC's health and reflection: the HTTP port serves them too (native gRPC reaches them
        # there), from the same servicers, so both ports report one status.
        standard = self.standard
        self.http_app = create_app(
            self.registry + standard.registry,
            {**servicers, **standard.servicers},
            options,
            ready=self.store_reachable,
        )
        if settings.grpc_listener:
            await self._start_grpc(servicers, telemetry, idempotency)
        else:
            await standard.serving(self.servicers)

    async def _start_grpc(
        self, servicers: dict[str, object], telemetry: Telemetry, idempotency: StoredIdempotency
    ) -> None:
        """The grpc.aio server on its own port, over the same servicers, gate and streams."""
        settings = self.settings
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
                standard=self.standard,
                body_timeout=settings.body_timeout_seconds,
                header_timeout=settings.header_timeout_seconds,
            )
        except RuntimeError:
            raise PortBusy("gRPC", settings.grpc_host, settings.grpc_port) from None
        await start(self.grpc_server)

    def _services(self, store: ObjectStore, gate: Gate) -> tuple[dict[str, object], list[Job]]:
        """Every servicer by full service name, and the background jobs they need."""
        settings = self.settings
        servicers: dict[str, object] = {"services.auth.AuthService": AuthService(gate)}
        limiter = gate.limiter
        jobs: list[Job] = [
            purge_expired_revocations(
                store, rate_buckets_full_after=0.0 if limiter is None else limiter.full_after
            ),
            compact_event_log(store),
        ]

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

    def _authenticate(
        self, method: Method, metadata: Iterable[tuple[str, str | bytes]], peer: Peer
    ) -> Awaitable[object]:
        assert self.gate is not None
        if self.shutting_down:
            raise shutting_down()
        caller = self.gate.admitted_now(method.full_name, metadata)
        if caller is None:
            return admit_caller(self.gate, method, metadata, peer)
        note_user(caller.username)
        return done.NOTHING

    def begin_shutdown(self) -> None:
        """Fail readiness, refuse new calls on both transports, end every open stream with
        UNAVAILABLE; calls in flight may still finish (:meth:`stop` waits for them).

        gRPC starts draining now (health NOT_SERVING, the grace running) while REST drains
        too: both transports share one grace instead of gRPC's starting after REST's.

        The leader steps down now: background work stops and another process may take over
        while calls drain. Kept until :meth:`stop`, the leadership was held for the whole drain
        (seconds under load, up to the grace and the store's close)."""
        self.shutting_down = True
        self.streams.close_all()
        if self._background is not None:
            self._background.cancel()  # stop() waits for it
        if self._grpc_drained is None:
            grace = self.settings.shutdown_grace_seconds
            self._grpc_drained = asyncio.ensure_future(
                self.standard.stopping()
                if self.grpc_server is None
                else stop(self.grpc_server, grace)
            )

    async def stop(self) -> None:
        """Let in-flight gRPC calls finish, stop background work, then close the store."""
        self.begin_shutdown()
        if self._grpc_drained is not None:
            await self._grpc_drained
        for task in [*self._replica_work, *([self._background] if self._background else [])]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.store is not None:
            await self.store.close()


def gateway_options(settings: Settings, **server_specific: Any) -> GatewayOptions:
    """The HTTP side's policy as the settings say it, for ``serve`` and ``proxy`` alike; each
    adds what is its own (JSON options, streams, the authenticate hook, the document...)."""
    return GatewayOptions(
        max_body_bytes=settings.max_body_bytes,
        body_timeout_seconds=settings.body_timeout_seconds,
        cors_origins=settings.cors_origins,
        rpc_prefix=settings.rpc_prefix,
        # With a metrics port, /metrics is served there (app.server.serving) instead.
        metrics_endpoint=settings.metrics and not settings.metrics_port,
        metrics_token=settings.metrics_token,
        # Workers (pyvoy's always) are children of the process the user started.
        server_pid=os.getppid()
        if settings.workers > 1 or settings.server == "pyvoy"
        else os.getpid(),
        client_certificate_header=settings.server == "pyvoy",
        grpc_client_certificate_required=bool(settings.tls_client_ca),
        **server_specific,
    )


async def open_gate(settings: Settings, **store_options: Any) -> tuple[ObjectStore, Gate]:
    """The store with a first admin in it, and the gate over its accounts and tokens."""
    make_private_folder(settings.data_dir)
    issuer = TokenIssuer(
        load_secret(settings.jwt_secret, settings.data_dir),
        ttl_seconds=settings.token_ttl_seconds,
    )
    with _database_refusal(settings):
        store = await asyncio.to_thread(
            ObjectStore.open, settings.effective_database_url, **store_options
        )
    try:
        hasher = PasswordHasher(cost=settings.password_hash_cost)
        with _database_refusal(settings):
            await bootstrap_admin(store, hasher, settings.admin_password)
            await note_signing_secret(store, issuer)
    except BaseException:
        await store.close()
        raise
    limiter = limiter_for(store.rate_buckets, *settings.rate_limits())
    return store, Gate(
        store, issuer, hasher, trusted_proxies=settings.trusted_proxies, limiter=limiter
    )


def check_rate_limited_methods(settings: Settings, registry: Registry) -> None:
    """Each method of ``PORTICO_RATE_LIMIT_METHODS`` is one this server serves: a misspelt one
    would otherwise leave the method it meant unlimited without a word."""
    served = {m.full_name: m for m in registry}
    for name in settings.rate_limits()[1]:
        if name not in served:
            close = difflib.get_close_matches(name, served, 1, 0.8)
            hint = f" (did you mean {served[close[0]].grpc_path.lstrip('/')}?)" if close else ""
            raise ConfigurationError(
                f"PORTICO_RATE_LIMIT_METHODS: {name.rpartition('.')[0]}/"
                f"{name.rpartition('.')[2]} is not a served method{hint}"
            )


@contextlib.contextmanager
def _database_refusal(settings: Settings) -> Iterator[None]:
    """A database that cannot be used at start (not running, a wrong password or name, a
    folder it cannot write) stops the start with one line naming the setting and what the
    driver said, not a chain of tracebacks ending in "retry shortly"."""
    try:
        yield
    except Unavailable as exc:
        variable = "PORTICO_DATABASE_URL" if settings.database_url else "PORTICO_DATA_DIR"
        url = make_url(settings.effective_database_url).render_as_string(hide_password=True)
        said = (exc.detail or str(exc)).strip().splitlines()[0][:300]
        raise ConfigurationError(f"{variable}: cannot use the database {url}: {said}") from exc


# The store's note of the secret the last process started on it signs tokens with.
SIGNING_SECRET = "signing_secret_fingerprint"


async def note_signing_secret(store: ObjectStore, issuer: TokenIssuer) -> None:
    """Say at start when the process started on this store before signed with another secret:
    replicas on one PostgreSQL refuse each other's tokens unless they share PORTICO_JWT_SECRET
    (one without it generates its own, in its own data folder), and nothing else tells."""
    mine = issuer.fingerprint()
    async with store.transaction() as tx:
        known = await tx.counter(SIGNING_SECRET)
        if known != mine:
            await tx.set_counter(SIGNING_SECRET, mine)
    if known is not None and known != mine:
        log.warning(
            "PORTICO_JWT_SECRET differs from the secret of the last server started on this "
            "database: tokens one issues are refused by the other. Give every replica the "
            "same PORTICO_JWT_SECRET (after changing it on purpose, restart every one)"
        )


async def store_answers(store: ObjectStore) -> bool:
    """Readiness of the store: it answers a query."""
    try:
        await store.current_revision()
    except Exception:  # a probe: whatever the store raises means "not ready"
        log.warning("not ready: the store does not answer", exc_info=True)
        return False
    return True


async def admit_caller(
    gate: Gate, method: Method, metadata: Iterable[tuple[str, str | bytes]], peer: Peer
) -> object:
    """The gate's verdict on a call, a refusal raised as the transports render it (with its
    details: a rate limit's RetryInfo is HTTP's Retry-After)."""
    try:
        caller = await gate.admit(method.full_name, metadata, peer)
    except Rejected as rejected:
        headers = [("www-authenticate", rejected.challenge)] if rejected.challenge else []
        details = rejected.status_proto().details
        raise GatewayError(rejected.code, rejected.message, details, headers=headers) from None
    if caller is not None:
        note_user(caller.username)
    return caller


async def bootstrap_admin(store: ObjectStore, hasher: PasswordHasher, password: str) -> None:
    """On first start (no accounts at all), create ``admin``; never with a built-in password."""
    if await store.accounts.list():
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
        await store.accounts.create(BOOTSTRAP_ADMIN, password_hash, "admin")
    except AlreadyExists:  # another worker of this server got there first
        return
    if generated:
        # Printed once, to the console only: it is never stored or logged anywhere else.
        print(
            f"\nCreated account {BOOTSTRAP_ADMIN!r} with password {password}\n"
            "Keep it now: it will not be shown again.\n",
            flush=True,
        )
