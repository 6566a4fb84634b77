"""The proxy one ``portico proxy --server pyvoy`` worker builds (:data:`app.proxy.run.PROXY`): a
:class:`~app.proxy.server.Proxy` whose calls within a request go out through Envoy
(:mod:`app.proxy.envoy_calls`), under the lifespan, drain and reload every pyvoy worker has
(:mod:`app.server.pyvoy_app`)."""

from __future__ import annotations

from starlette.types import ASGIApp

from app.gateway.invoker import Invoker
from app.gateway.registry import Method
from app.gateway.upstream_http2 import Http2Invoker
from app.proxy.envoy_calls import EnvoyOrChannel, envoy_connect, marking_envoy_requests
from app.proxy.server import Proxy, Upstream
from app.settings.config import Settings


class EnvoyProxy(Proxy):
    """The proxy whose calls within a request Envoy's HTTP/2 client makes."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._marked = marking_envoy_requests(self.app)
        self._connects = [envoy_connect(index) for index in range(len(settings.upstreams))]

    @property
    def http_app(self) -> ASGIApp:
        return self._marked

    def upstream_invoker(self, methods: list[Method], upstreams: dict[str, Upstream]) -> Invoker:
        scheme = "https" if self.settings.upstream_tls or self.settings.upstream_ca else "http"
        envoy = Http2Invoker(
            methods,
            {
                service: (self._connects[upstream.index], f"{scheme}://{upstream.target}")
                for service, upstream in upstreams.items()
            },
            forwarding=self.forwarding(),
        )
        return EnvoyOrChannel(envoy, super().upstream_invoker(methods, upstreams))
