"""``portico proxy``: the gateway in front of gRPC servers Portico did not write.

The same gateway app as ``serve`` (router, codec, streaming, errors, OpenAPI, dashboard, gate),
built from the upstreams' descriptors and answered by an
:class:`~app.gateway.upstream.UpstreamInvoker` instead of in-process servicers. When the
descriptors change (a poll of server reflection, or SIGHUP) a new app is built and swapped in;
calls in flight finish on the one they started on.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import descriptor
from starlette.types import ASGIApp, Receive, Scope, Send

import gen
from app import __version__
from app.assembly.gate import admit_caller, open_gate
from app.assembly.gateway import gateway_options, store_errors, store_trouble
from app.auth.gate import Gate
from app.auth.policy import Policy
from app.auth.policy_file import load_if_set
from app.auth.service import ACCESS as LOGIN_ACCESS
from app.auth.service import AuthService
from app.calls.callers import current_caller
from app.gateway.admission import NO_AUTH
from app.gateway.codec.json_mapping import JsonOptions
from app.gateway.invoker import Invoker, ServicerInvoker
from app.gateway.open_streams import OpenStreams, shutting_down
from app.gateway.openapi.document import openapi_document
from app.gateway.options import GatewayOptions, Peer
from app.gateway.registry import Method, Registry
from app.gateway.routes import Readiness, gateway_app
from app.gateway.upstream import ByService, Forwarding, UpstreamInvoker
from app.observe.calls import Telemetry
from app.observe.metrics import RECORDING
from app.proxy.descriptors import DescriptorError, Descriptors, from_file_set, from_reflection
from app.server.jobs import purge_expired_revocations, supervised
from app.server.tls import check_upstream_tls, upstream_credentials
from app.settings.config import ConfigurationError, Settings
from app.store import ObjectStore
from gen.services.auth import auth_pb2

log = logging.getLogger("portico.proxy")

AUTH_SERVICE = "services.auth.AuthService"
REFLECTION_TIMEOUT_SECONDS = 10.0
READY_TIMEOUT_SECONDS = 1.0
# Reconnect soon after an upstream comes back (grpc's default backoff grows to two minutes).
CHANNEL_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)


def caller_metadata() -> list[tuple[str, str | bytes]]:
    """The caller the gate admitted, as ``x-portico-*`` metadata (none for an anonymous call):
    the subject (an account's name, or the provider's ``sub``), its role, and the provider that
    vouched for it (none for Portico's own accounts)."""
    caller = current_caller.get()
    if caller is None:
        return []
    found: list[tuple[str, str | bytes]] = [("x-portico-subject", _ascii(caller.username))]
    found.append(("x-portico-roles", caller.role))
    if caller.issuer:
        found.append(("x-portico-issuer", _ascii(caller.issuer)))
    return found


def _ascii(text: str) -> str:
    """gRPC metadata values are printable ASCII: anything else percent-encoded."""
    return urllib.parse.quote(text, safe="".join(chr(c) for c in range(0x21, 0x7F) if c != 0x25))


class SwappableApp:
    """The ASGI app of the current descriptors; a request runs on the app it found."""

    def __init__(self) -> None:
        self.current: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.current is not None, "the proxy serves once its first app is built"
        await self.current(scope, receive, send)


@dataclasses.dataclass
class Upstream:
    """One gRPC server fronted, and the descriptors last read from it."""

    target: str
    channel: grpc.aio.Channel
    index: int  # in PORTICO_UPSTREAMS
    descriptors: Descriptors | None = None


def check_proxy_settings(settings: Settings) -> None:
    """What only the proxy needs of the settings; ConfigurationError naming the setting."""
    if not settings.upstreams:
        raise ConfigurationError(
            "PORTICO_UPSTREAMS: none given; allowed: one or more host:port (--upstream)"
        )
    if settings.descriptor_set and len(settings.upstreams) != 1:
        raise ConfigurationError(
            "PORTICO_DESCRIPTOR_SET: needs exactly one upstream; allowed: a descriptor set with "
            "one --upstream (several upstreams describe themselves by reflection)"
        )
    check_upstream_tls(settings)
    if settings.descriptor_set:
        try:
            found = from_file_set(
                Path(settings.descriptor_set).read_bytes(), settings.descriptor_set
            )
        except DescriptorError as exc:
            raise ConfigurationError(f"PORTICO_DESCRIPTOR_SET: {exc}") from None
        if not found.services:
            raise ConfigurationError(
                f"PORTICO_DESCRIPTOR_SET: {settings.descriptor_set} declares no service; allowed: "
                "a set with the upstream's services (protoc --include_imports)"
            )


class Proxy:
    """The upstreams' channels, the gate, and the app built from their descriptors."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.app = SwappableApp()
        self.upstreams: list[Upstream] = []
        self.shutting_down = False
        self.streams = OpenStreams(settings.stream_heartbeat_seconds)
        self.json = JsonOptions(
            proto_names=settings.json_names == "proto",
            ignore_unknown=settings.unknown_fields == "ignore",
        )
        self.telemetry = Telemetry(metrics=settings.metrics, request_log=settings.request_log)
        self.store: ObjectStore | None = None
        self.grpc_port = 0  # it serves no gRPC port of its own
        self.gate: Gate | None = None
        self._local: Registry | None = None  # the login, with --auth jwt
        self._servicers: dict[str, object] = {}
        self._reload_wanted = asyncio.Event()
        self._lock = asyncio.Lock()
        self._work: list[asyncio.Task[None]] = []
        # The upstreams' methods follow the name rule, or the policy file's roles, checked
        # against them whenever their descriptors are read.
        self.policy = Policy(LOGIN_ACCESS, load_if_set(settings.policy_file))

    async def start(self) -> None:
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        settings = self.settings
        check_proxy_settings(settings)
        RECORDING.on = settings.metrics  # the gate's and the store's, as serve does
        if settings.proxy_auth == "jwt":
            await self._open_auth_store()
        else:
            log.warning(
                "--auth %s: the proxy checks no credentials; %s",
                settings.proxy_auth,
                "the upstreams decide on the caller's own"
                if settings.proxy_auth == "passthrough"
                else "anyone who reaches it may call every method of the upstreams",
            )
        credentials = upstream_credentials(settings)
        for index, target in enumerate(settings.upstreams):
            channel = (
                grpc.aio.secure_channel(target, credentials, options=CHANNEL_OPTIONS)
                if credentials is not None
                else grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
            )
            self.upstreams.append(Upstream(target, channel, index))
        await self.reload(signalled=True)
        # Supervised: a bug in one reload must not end them all.
        self._work.append(asyncio.create_task(supervised(self._watch)))

    async def _open_auth_store(self) -> None:
        """The same accounts, tokens and login as ``portico serve`` over the same settings."""
        self.store, self.gate = await open_gate(self.settings, self.policy)
        # The login's own file only: the proxy loads none of Portico's APIs.
        self._local = Registry([auth_pb2.DESCRIPTOR], only={AUTH_SERVICE})
        self._servicers = {AUTH_SERVICE: AuthService(self.gate)}
        self._work.append(asyncio.create_task(supervised(purge_expired_revocations(self.store))))

    def request_reload(self) -> None:
        """Re-read every upstream's descriptors soon (SIGHUP)."""
        self._reload_wanted.set()

    async def _watch(self) -> None:
        """Re-read descriptors when asked, and ask reflection every poll interval."""
        while True:
            signalled = False
            # An upstream not heard from yet is asked again soon, whatever the interval.
            waiting = any(u.descriptors is None for u in self.upstreams)
            interval = self.settings.upstream_poll_seconds
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(interval, 1.0) if waiting else interval):
                    await self._reload_wanted.wait()
                    signalled = True
            self._reload_wanted.clear()
            await self.reload(signalled=signalled)

    async def reload(self, *, signalled: bool) -> bool:
        """Read the descriptors again; rebuild the app when any changed. A descriptor set is
        read again only when signalled; an upstream that cannot answer keeps what it had."""
        async with self._lock:
            changed = self.app.current is None
            for upstream in self.upstreams:
                if self.settings.descriptor_set and not signalled and upstream.descriptors:
                    continue
                try:
                    fresh = await self._read(upstream)
                except DescriptorError as exc:
                    log.warning("descriptors not (re)read: %s", exc)
                    continue
                if upstream.descriptors is None or fresh.digest != upstream.descriptors.digest:
                    upstream.descriptors = fresh
                    changed = True
            if changed:
                await self._build()
            return changed

    async def _read(self, upstream: Upstream) -> Descriptors:
        path = self.settings.descriptor_set
        if path:
            try:
                data = await asyncio.to_thread(Path(path).read_bytes)
            except OSError as exc:
                raise DescriptorError(f"{path}: cannot read it ({exc.strerror})") from None
            return from_file_set(data, path)
        return await from_reflection(upstream.channel, REFLECTION_TIMEOUT_SECONDS, upstream.target)

    async def _build(self) -> None:
        """A new app over the current descriptors, swapped in for the next request."""
        files: list[descriptor.FileDescriptor] = []
        channels: dict[str, Upstream] = {}
        local = self._local
        if local is not None:
            files.extend(s.descriptor.file for s in local.services)
        comments = [await asyncio.to_thread(Path(gen.DESCRIPTOR_SET).read_bytes)] if local else []
        for upstream in self.upstreams:
            found = upstream.descriptors
            if found is None:
                continue
            comments.append(found.file_set())
            for name in found.services:
                if local is not None and name == AUTH_SERVICE:
                    continue
                if name in channels:
                    log.warning("%s is served by two upstreams; calls go to the first", name)
                    continue
                channels[name] = upstream
                files.append(found.pool.FindServiceByName(name).file)
        services = set(channels) | ({AUTH_SERVICE} if local is not None else set())
        registry = Registry(files, only=services)
        if self.policy.file is not None:
            try:
                self.policy.file.check(m.full_name for m in registry)
            except ConfigurationError as exc:
                if self.app.current is None:
                    raise  # at start: the start stops, naming what is wrong
                log.error("the upstreams' new descriptors are not served: %s", exc)
                return
        remote = [m for m in registry if m.service in channels]
        invoker = self.upstream_invoker(remote, channels)
        if local is not None:
            by_service: dict[str, Invoker] = dict.fromkeys(channels, invoker)
            by_service[AUTH_SERVICE] = ServicerInvoker(local, self._servicers, store_errors)
            invoker = ByService(by_service)
        # Off the loop: the document of a large API takes a while to build.
        descriptor_sets = b"".join(comments)
        document = await asyncio.to_thread(self._openapi, registry, descriptor_sets)
        options = self._options(document, descriptor_sets)
        self.app.current = gateway_app(registry, invoker, options, ready=self.ready)
        log.info(
            "serving %d method(s) of %d service(s) from %s",
            len(registry),
            len(registry.services),
            ", ".join(u.target for u in self.upstreams),
        )

    def upstream_invoker(self, methods: list[Method], upstreams: dict[str, Upstream]) -> Invoker:
        """Who answers the upstreams' methods: their grpc.aio channels, by service."""
        return UpstreamInvoker(
            methods,
            {service: upstream.channel for service, upstream in upstreams.items()},
            forwarding=self.forwarding(),
        )

    def forwarding(self) -> Forwarding:
        """What the upstreams learn of the caller: with ``--auth passthrough`` their own
        credentials; else as PORTICO_PROXY_FORWARD_IDENTITY says (nothing by default)."""
        forward = self.settings.proxy_forward_identity
        return Forwarding(
            authorization=self.settings.proxy_auth == "passthrough" or forward == "authorization",
            identity=caller_metadata if forward == "metadata" else None,
        )

    @property
    def http_app(self) -> ASGIApp:
        """The app the HTTP server serves."""
        return self.app

    def _openapi(self, registry: Registry, descriptor_set: bytes) -> dict[str, Any]:
        """The OpenAPI document: public methods are what a caller needs no token for."""
        auth = self.settings.proxy_auth

        def public(method: Method) -> bool:
            return auth == "none" or (auth == "jwt" and self.policy.is_public(method.full_name))

        return openapi_document(
            registry,
            self.json,
            title="Portico proxy",
            version=__version__,
            public_methods=public,
            descriptor_set=descriptor_set,
        )

    def _options(self, document: dict[str, Any], descriptor_sets: bytes) -> GatewayOptions:
        settings = self.settings
        auth = settings.proxy_auth
        return gateway_options(
            settings,
            json=self.json,
            streams=self.streams,
            authenticate=self._authenticate if auth == "jwt" else self._admit_all,
            openapi=document,
            descriptor_sets=descriptor_sets,
            cancel_unary_on_disconnect=True,  # the upstream stops working for nobody
            telemetry=self.telemetry,
        )

    async def _authenticate(
        self, method: Method, metadata: Iterable[tuple[str, str | bytes]], peer: Peer
    ) -> object:
        assert self.gate is not None
        if self.shutting_down:
            raise shutting_down()
        return await admit_caller(self.gate, method, metadata, peer)

    async def _admit_all(self, method: Method, metadata: Any, peer: Peer) -> object:
        if self.shutting_down:
            raise shutting_down()
        return await NO_AUTH(method, metadata, peer)

    async def ready(self) -> Readiness:
        """``/readyz``: ready unless shutting down, and only once the auth store answers and
        every upstream has given its descriptors and accepts a connection now. One that gave
        them and no longer answers is said by name: the proxy is not starting, its upstream is
        gone."""
        if self.shutting_down:
            return Readiness(False, {"status": "shutting down"})
        trouble = "" if self.store is None else await store_trouble(self.store)
        if trouble:
            return Readiness(False, {"status": "unavailable", "store": trouble})
        for upstream in self.upstreams:
            waiting = {"status": "starting", "upstream": upstream.target}
            if upstream.descriptors is None:
                return Readiness(False, waiting)
            try:
                async with asyncio.timeout(READY_TIMEOUT_SECONDS):
                    await upstream.channel.channel_ready()
            except TimeoutError:
                log.warning("not ready: upstream %s does not answer", upstream.target)
                return Readiness(
                    False, {"status": "upstream unavailable", "upstream": upstream.target}
                )
        return Readiness(True)

    def begin_shutdown(self) -> None:
        self.shutting_down = True
        self.streams.close_all()

    async def stop(self) -> None:
        self.begin_shutdown()
        for task in self._work:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for upstream in self.upstreams:
            await upstream.channel.close()
        if self.store is not None:
            await self.store.close()
