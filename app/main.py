"""``portico serve``'s server: the catalog's APIs over the store and the gate, on both
transports. :data:`PORTICO` is what a server backend runs (:mod:`app.server.serving`);
nothing below imports this module."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Iterable
from datetime import timedelta
from pathlib import Path

import grpc
from starlette.types import ASGIApp

from app import __version__, catalog
from app.assembly.gate import admit_caller, open_gate
from app.assembly.gateway import gateway_options, store_errors, store_trouble
from app.auth.gate import Gate
from app.auth.policy_file import load_if_set
from app.auth.service import AuthService
from app.calls.close_names import close_names
from app.gateway import immediate
from app.gateway.codec.json_mapping import JsonOptions
from app.gateway.open_streams import OpenStreams, shutting_down
from app.gateway.options import Peer
from app.gateway.registry import Method, Registry
from app.gateway.routes import Readiness, create_app
from app.grpc_server.server import create_server, start, stop
from app.grpc_server.standard import StandardServices
from app.observe import loop_counters
from app.observe.calls import Telemetry, note_user
from app.observe.metrics import RECORDING
from app.rules.field_checks import FieldChecks
from app.server.application import Application
from app.server.background import BackgroundWork
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
from app.server.process import url_host
from app.server.tls import check_tls_files, grpc_credentials
from app.services.checked import checked_servicers
from app.settings.config import ConfigurationError, Settings
from app.store import ObjectStore

log = logging.getLogger("portico")


class Portico:
    """One server: the store, the gate, every servicer, and both transports over them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.registry = catalog.registry()
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
        # How every background loop is doing (``/readyz`` says which are not running).
        self.background = BackgroundWork()
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
        RECORDING.on = settings.metrics  # the store's, the gate's and the simulation's
        check_tls_files(settings)
        check_rate_limited_methods(settings, self.registry)
        policy_file = load_if_set(settings.policy_file)
        try:
            policy = catalog.policy(self.registry, policy_file)
        except ConfigurationError:
            raise
        except ValueError as exc:
            raise ConfigurationError(f"the server's APIs do not match gen/: {exc}") from None
        self.store, self.gate = await open_gate(
            settings,
            policy,
            compaction_age=timedelta(seconds=settings.event_retention_seconds),
            group_max_members=settings.group_commit_max_transactions,
            group_max_seconds=settings.group_commit_max_seconds,
        )
        servicers, jobs = self._services(self.store, self.gate)
        self.servicers = servicers
        idempotency = self._idempotency(self.store)
        jobs.append(forget_expired_idempotency_keys(idempotency))
        self._background = asyncio.create_task(
            run_while_leader(self.store, jobs, lambda: self.shutting_down, self.background)
        )
        telemetry = Telemetry(metrics=settings.metrics, request_log=settings.request_log)
        if settings.metrics:
            for job in (sample_event_log(self.store), flush_metrics):
                self._replica_work.append(self._on_every_replica(job))
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
            openapi=catalog.portico_openapi(self.registry, json_options),
            descriptor_sets=Path(catalog.DESCRIPTOR_SET).read_bytes(),
            telemetry=telemetry,
        )
        # Both transports call the servicers behind the field rules' checks.
        servicers = checked_servicers(servicers, FieldChecks(catalog.RULES))
        # The grpc.aio port first: the HTTP side says which port it got (port 0: any free one).
        if settings.grpc_listener:
            await self._start_grpc(servicers, telemetry, idempotency)
        else:
            await self.standard.serving(self.servicers)
        if settings.server != "pyvoy" and self.grpc_port:
            options = dataclasses.replace(options, grpc_port=self.grpc_port)
        # gRPC's health and reflection: the HTTP port serves them too (native gRPC reaches them
        # there), from the same servicers, so both ports report one status.
        standard = self.standard
        self.http_app = create_app(
            self.registry + standard.registry,
            {**servicers, **standard.servicers},
            options,
            ready=self.readiness,
        )

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
                known_errors=store_errors,
                body_timeout=settings.body_timeout_seconds,
                header_timeout=settings.header_timeout_seconds,
            )
        except RuntimeError:
            raise PortBusy("gRPC", settings.grpc_host, settings.grpc_port) from None
        await start(self.grpc_server)

    def _services(self, store: ObjectStore, gate: Gate) -> tuple[dict[str, object], list[Job]]:
        """Every servicer by full service name, and the background jobs they need (this
        replica's own are started here)."""
        settings = self.settings
        limiter = gate.limiter
        jobs: list[Job] = [
            purge_expired_revocations(
                store, rate_buckets_full_after=0.0 if limiter is None else limiter.full_after
            ),
            compact_event_log(store),
        ]
        servicers: list[object] = [AuthService(gate)]
        for api in catalog.APIS:
            system = api.build(store, settings)
            servicers += system.servicers
            jobs += system.jobs
            self._replica_work += [self._on_every_replica(job) for job in system.replica_jobs]
        try:
            return self.registry.bind(servicers), jobs
        except ValueError as exc:
            raise ConfigurationError(f"the server's APIs do not match gen/: {exc}") from None

    def _on_every_replica(self, job: Job) -> asyncio.Task[None]:
        """``job`` run (and reported) in this process whether or not it leads."""
        state = self.background.add(job, on_leader=False)
        return asyncio.create_task(supervised(job, state=state))

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

    async def readiness(self) -> Readiness:
        """``/readyz``: ready unless shutting down or the store does not answer a query; the
        background loops that should run here and do not are named (with ``?verbose``, how
        every one is doing)."""
        if self.shutting_down:
            return Readiness(False, {"status": "shutting down"})
        trouble = "not open" if self.store is None else await store_trouble(self.store)
        body: dict[str, object] = (
            {"status": "unavailable", "store": trouble} if trouble else {"status": "ready"}
        )
        not_running = self.background.not_running()
        if not_running:
            body["not_running"] = not_running
        details: dict[str, object] = {"background": self.background.report()}
        provider = None if self.gate is None else self.gate.provider
        if provider is not None:
            # Not a reason to send no calls here: Portico's own tokens work without it.
            details["identity_provider"] = report = provider.keys.report()
            if report["status"] == "unreachable":
                body["identity_provider"] = report
        return Readiness(not trouble, body, details)

    def _authenticate(
        self, method: Method, metadata: Iterable[tuple[str, str | bytes]], peer: Peer
    ) -> Awaitable[object]:
        assert self.gate is not None
        if self.shutting_down:
            raise shutting_down()
        caller = self.gate.admitted_now(method.full_name, metadata)
        if caller is None:
            return admit_caller(self.gate, method, metadata, peer)
        note_user(caller.username, caller.issuer)
        return immediate.NOTHING

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


async def flush_metrics() -> None:
    """This process's numbers into the metrics every second (a background loop of its own)."""
    await loop_counters.flush_every()


def check_rate_limited_methods(settings: Settings, registry: Registry) -> None:
    """Each method of ``PORTICO_RATE_LIMIT_METHODS`` is one this server serves: a misspelt one
    would otherwise leave the method it meant unlimited without a word."""
    served = {m.full_name: m for m in registry}
    for name in settings.rate_limits()[1]:
        if name not in served:
            close = close_names(name, served, 1, 0.8)
            hint = f" (did you mean {served[close[0]].grpc_path.lstrip('/')}?)" if close else ""
            raise ConfigurationError(
                f"PORTICO_RATE_LIMIT_METHODS: {name.rpartition('.')[0]}/"
                f"{name.rpartition('.')[2]} is not a served method{hint}"
            )


def announce(settings: Settings, http_base: str, grpc_port: int) -> None:
    """The start-up line: where each protocol is served."""
    if settings.server == "pyvoy":
        also = f"; grpc.aio also on {url_host(settings.grpc_host)}:{grpc_port}" if grpc_port else ""
        log.info(
            "portico %s on pyvoy: REST/JSON, gRPC, Connect and gRPC-Web on %s (dashboard: "
            "%s/dashboard/)%s",
            __version__,
            http_base,
            http_base,
            also,
        )
        return
    log.info(
        "portico %s: gRPC on %s:%d, REST/JSON on %s (dashboard: %s/dashboard/)",
        __version__,
        url_host(settings.grpc_host),
        grpc_port,
        http_base,
        http_base,
    )


# What ``portico serve`` runs, on whichever server backend the settings name.
PORTICO = Application(build="app.main:Portico", announce=announce, one_per_data_folder=True)
