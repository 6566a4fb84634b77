"""Settings: one object, read once from ``PORTICO_*`` environment variables.

Command-line flags override individual fields with :func:`dataclasses.replace`; nothing else reads
the environment, so tests build their own ``Settings`` and never patch globals. Every field is
checked when a ``Settings`` is built (by the rule in its metadata, see
``app/settings/setting_rules.py``), so a bad value stops the start with one line naming the variable
and what it may be.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from app.calls.close_names import close_names
from app.settings import identity_rules as identity
from app.settings import limits
from app.settings.setting_rules import (
    MAX_RATE,
    ConfigurationError,
    any_int,
    at_least,
    between,
    cidr_list,
    database_url,
    default_burst,
    descriptor_set_or_empty,
    dotted_versions,
    file_or_empty,
    hostname,
    method_name_or_empty,
    metrics_apart,
    one_of,
    origins,
    parse_rate_override,
    password_or_empty,
    path_prefix,
    power_of_two,
    rate_limit_pairing,
    rate_overrides,
    secret_or_empty,
    subnet,
    tls_pairing,
    token_or_empty,
    upstream_list,
    upstream_tls_pairing,
)

__all__ = ["DEFAULT_K8S_VERSIONS", "ConfigurationError", "Settings"]

DEFAULT_K8S_VERSIONS = ("1.29.10", "1.30.6", "1.31.2", "1.32.0")


def _rule(default: Any, rule: Any, **kwargs: Any) -> Any:
    return field(default=default, metadata={"rule": rule}, **kwargs)


# The HTTP servers Portico runs on (PORTICO_SERVER); app.server.backends has one for each.
SERVERS = ("uvicorn", "pyvoy")


@dataclass(frozen=True)
class Settings:
    """Everything Portico can be configured with; each field has a ``PORTICO_<NAME>`` variable."""

    http_host: str = _rule("127.0.0.1", hostname)
    # 0 asks the system for a free port (tests do).
    http_port: int = _rule(8080, between(0, 65535))
    grpc_host: str = _rule("127.0.0.1", hostname)
    grpc_port: int = _rule(50051, between(0, 65535))
    data_dir: Path = Path("./data")
    # Server processes sharing the ports (and the database); background work runs on one.
    workers: int = _rule(1, between(1, 64))
    # The HTTP server: uvicorn (HTTP/1.1), or pyvoy (Envoy's HTTP/1.1 and HTTP/2, which also
    # serves native gRPC on the HTTP port).
    server: str = _rule("uvicorn", one_of(*SERVERS))
    # The separate grpc.aio port: "auto" serves it under uvicorn and not under pyvoy (whose HTTP
    # port serves gRPC), unless a gRPC port is given; "on" and "off" say so whatever the server.
    grpc_server: str = _rule("auto", one_of("auto", "on", "off"))
    # One log line per HTTP request; off by default, as it costs more than a small call.
    access_log: bool = False
    # One structured line per RPC call on either transport (logger ``portico.requests``).
    request_log: bool = False
    # "text" or "json" (one JSON object a line): the format of every log line.
    log_format: str = _rule("text", one_of("text", "json"))
    # Prometheus metrics, collected and served at /metrics; "false" records nothing.
    metrics: bool = True
    # Serve /metrics on this port of http_host instead of the HTTP port (0: the HTTP port).
    metrics_port: int = _rule(0, between(0, 65535))
    # When set, /metrics answers only "Authorization: Bearer <token>" (16 characters or more).
    metrics_token: str = _rule("", token_or_empty)
    # Empty means SQLite in the data directory.
    database_url: str = _rule("", database_url)
    # How long a start keeps trying a PostgreSQL that does not answer (0: tries once).
    database_wait_seconds: float = _rule(30.0, between(0.0, 3600.0))
    # Group commit: at most this many write transactions share one commit (1: each commits
    # alone), and the first of a group waits at most this long for the others to join.
    group_commit_max_transactions: int = _rule(256, between(1, 10_000))
    group_commit_max_seconds: float = _rule(0.02, between(0.0, 1.0))
    # Events older than this are compacted away; a watch from before them gets OUT_OF_RANGE.
    event_retention_seconds: int = _rule(86_400, at_least(1))
    # Bootstrap admin password on first start; a random one is printed when empty.
    admin_password: str = _rule("", password_or_empty)
    # Empty means: generate once and keep it in the data directory (mode 0600).
    jwt_secret: str = _rule("", secret_or_empty)
    token_ttl_seconds: int = _rule(3600, at_least(1))
    # scrypt's N for password hashes: strong by default; tests set it low to run fast.
    password_hash_cost: int = _rule(2**17, power_of_two(2**1, 2**20))
    # "proto" emits field names as written in the .proto files; "camel" emits lowerCamelCase.
    json_names: str = _rule("proto", one_of("proto", "camel"))
    # "reject" answers unknown JSON fields and query parameters with 400; "ignore" drops them.
    unknown_fields: str = _rule("reject", one_of("reject", "ignore"))
    max_body_bytes: int = _rule(4 * 1024 * 1024, between(1024, 1024**3))
    # Slow clients: a request's headers, and a request body (not a client stream), must arrive
    # within these; a stream idle this long gets a keepalive.
    header_timeout_seconds: float = _rule(
        limits.DEFAULT_HEADER_TIMEOUT_SECONDS, between(0.001, 86_400.0)
    )
    body_timeout_seconds: float = _rule(
        limits.DEFAULT_BODY_TIMEOUT_SECONDS, between(0.001, 86_400.0)
    )
    stream_heartbeat_seconds: float = _rule(
        limits.DEFAULT_HEARTBEAT_SECONDS, between(0.001, 86_400.0)
    )
    # SIGTERM: open streams end, in-flight calls get this long, then the process exits.
    shutdown_grace_seconds: float = _rule(
        limits.DEFAULT_SHUTDOWN_GRACE_SECONDS, between(0.001, 86_400.0)
    )
    # pyvoy: a REST call's stream that sees no event this long ends (a stalled reader's too).
    stream_idle_seconds: float = _rule(limits.DEFAULT_STREAM_IDLE_SECONDS, between(1.0, 86_400.0))
    # pyvoy: the heap of each worker's allocator, by whose shares Envoy sheds load.
    max_heap_bytes: int = _rule(limits.DEFAULT_MAX_HEAP_BYTES, between(64 * 1024**2, 1024**4))
    cors_origins: tuple[str, ...] = _rule((), origins)
    # Connect and gRPC-Web answer /package.Service/Method and also this prefix + that path.
    rpc_prefix: str = _rule("/api", path_prefix)
    # Calls a second, and calls at once, each signed-in account (each client address, when
    # anonymous) may make; 0 (the default): unlimited. A burst of 0 means one second's rate.
    rate_limit_per_second: float = _rule(0.0, between(0.0, float(MAX_RATE)))
    rate_limit_burst: int = _rule(0, between(0, MAX_RATE))
    # Per-method limits instead: package.Service/Method=rate[:burst], comma-separated.
    rate_limit_methods: tuple[str, ...] = _rule((), rate_overrides)
    # Peers whose X-Forwarded-For / Forwarded headers name the real client (none by default).
    trusted_proxies: tuple[str, ...] = _rule((), cidr_list)
    # TLS for both transports: a PEM certificate chain and its key; both or neither.
    tls_cert: str = _rule("", file_or_empty)
    tls_key: str = _rule("", file_or_empty)
    # With it, gRPC callers must present a client certificate signed by this CA (PEM).
    tls_client_ca: str = _rule("", file_or_empty)
    # Seconds of wall time per step of the simulated infrastructure's clock.
    sim_step_seconds: float = _rule(1.0, between(0.000_001, 3600.0))
    k8s_versions: tuple[str, ...] = _rule(DEFAULT_K8S_VERSIONS, dotted_versions)
    # Simulated MaaS: addresses of machines, and the share of machines that fail to deploy.
    machine_ip_pool: str = _rule("10.20.0.0/16", subnet(max_prefix=30))
    sim_failure_ratio: float = _rule(0.0, between(0.0, 1.0))
    sim_seed: int = _rule(1, any_int)
    # Each registered scheduler node gets a /24 out of this pool.
    node_subnet_pool: str = _rule("10.128.0.0/16", subnet(max_prefix=24))
    # A node whose status stream ended is FAILED after this long without a report.
    node_grace_seconds: float = _rule(30.0, between(0.001, 86_400.0))
    # In-process simulated scheduler nodes, so the embedded default has capacity.
    sim_nodes: int = _rule(2, between(0, 1000))
    # An image no pod uses any more is removed from the nodes after this long.
    image_retention_seconds: float = _rule(3600.0, between(0.0, 31_536_000.0))
    # How long the outcome of a call made with an idempotency key is kept for its repeats.
    idempotency_retention_seconds: int = _rule(86_400, between(60, 30 * 86_400))
    # Test only: the full name of a method after whose committed keyed call the process kills
    # itself (SIGKILL) before replying. Empty (the default) injects no fault.
    test_crash_after_commit: str = _rule("", method_name_or_empty)
    demo: bool = False
    # `portico proxy`: the gRPC servers it fronts, and where their descriptors come from (server
    # reflection, or this FileDescriptorSet instead).
    upstreams: tuple[str, ...] = _rule((), upstream_list)
    descriptor_set: str = _rule("", descriptor_set_or_empty)
    # Who may call through the proxy: Portico's accounts and tokens ("jwt"), anyone ("none"), or
    # the upstream decides from the caller's own credentials, forwarded ("passthrough").
    proxy_auth: str = _rule("jwt", one_of("jwt", "none", "passthrough"))
    # TLS to the upstreams: system roots, or this CA (which implies TLS); a client certificate.
    upstream_tls: bool = False
    upstream_ca: str = _rule("", file_or_empty)
    upstream_cert: str = _rule("", file_or_empty)
    upstream_key: str = _rule("", file_or_empty)
    # How often the proxy asks the upstreams' reflection whether their descriptors changed.
    upstream_poll_seconds: float = _rule(30.0, between(0.1, 86_400.0))
    # -- identity providers and roles by policy (docs/how-to/identity-providers.md) --
    # Tokens of this OpenID provider are admitted beside Portico's own (empty: none are).
    oidc_issuer: str = _rule("", identity.url_or_empty)
    # Where its keys are; empty: the issuer's /.well-known/openid-configuration says.
    oidc_jwks_url: str = _rule("", identity.url_or_empty)
    oidc_audience: str = ""
    oidc_roles_claim: str = _rule("roles", identity.claim_path)
    oidc_role_map: tuple[str, ...] = _rule((), identity.role_map)
    oidc_algorithms: tuple[str, ...] = _rule(identity.ALGORITHMS, identity.algorithms)
    oidc_leeway_seconds: int = _rule(30, between(0, 300))
    oidc_jwks_timeout_seconds: float = _rule(
        limits.DEFAULT_JWKS_TIMEOUT_SECONDS, between(0.1, 60.0)
    )
    oidc_jwks_max_bytes: int = _rule(limits.DEFAULT_JWKS_MAX_BYTES, between(1024, 4 * 1024**2))
    oidc_jwks_refresh_seconds: float = _rule(
        limits.DEFAULT_JWKS_REFRESH_SECONDS, between(1.0, 3600.0)
    )
    # Who may call which method, instead of the name rule (YAML; empty: the name rule).
    policy_file: str = _rule("", file_or_empty)
    # `portico proxy`: what the upstream learns of the caller the gate admitted.
    proxy_forward_identity: str = _rule("none", one_of("none", "authorization", "metadata"))

    def __post_init__(self) -> None:
        for f in fields(self):
            rule = f.metadata.get("rule")
            if rule is not None:
                rule(variable(f.name), getattr(self, f.name))
        tls_pairing(self.tls_cert, self.tls_key, self.tls_client_ca)
        upstream_tls_pairing(
            self.upstream_tls, self.upstream_ca, self.upstream_cert, self.upstream_key
        )
        rate_limit_pairing(self.rate_limit_per_second, self.rate_limit_burst)
        identity.oidc_pairing(
            self.oidc_issuer,
            self.oidc_jwks_url,
            self.oidc_audience,
            self.proxy_auth,
            self.proxy_forward_identity,
        )
        metrics_apart(
            self.metrics, self.metrics_port, self.metrics_token, (self.http_port, self.grpc_port)
        )

    @property
    def effective_database_url(self) -> str:
        """The database URL, defaulting to SQLite in the data directory."""
        return self.database_url or f"sqlite:///{self.data_dir / 'portico.db'}"

    def rate_limits(self) -> tuple[tuple[float, int] | None, dict[str, tuple[float, int]]]:
        """The rate limit of every call as (rate, burst), None when off; and those of the
        methods named in ``rate_limit_methods``, by full method name (a rate of 0: none)."""
        rate = self.rate_limit_per_second
        default = (rate, self.rate_limit_burst or default_burst(rate)) if rate else None
        methods = {}
        for item in self.rate_limit_methods:
            parsed = parse_rate_override(item)
            assert parsed is not None  # checked when the settings were built
            methods[parsed[0]] = parsed[1:]
        return default, methods

    @property
    def grpc_listener(self) -> bool:
        """Whether the grpc.aio server listens on its own port."""
        if self.grpc_server == "auto":
            return self.server == "uvicorn"
        return self.grpc_server == "on"

    @property
    def tls(self) -> bool:
        """Whether both transports serve TLS."""
        return bool(self.tls_cert)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every field from its ``PORTICO_<NAME>`` variable, keeping defaults for the rest."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        defaults = cls()
        for f in fields(cls):
            raw = environ.get(variable(f.name))
            if raw is not None:
                values[f.name] = _parse(f.name, raw, getattr(defaults, f.name))
        return cls(**grpc_port_given(values))

    def environment(self) -> dict[str, str]:
        """Every setting as the ``PORTICO_*`` variable :meth:`from_env` reads it back from (a
        server process started by another one is configured this way)."""
        found = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, tuple):
                text = ",".join(value)
            else:
                text = str(value)
            found[variable(f.name)] = text
        # Resolved: "auto" would read a gRPC port given as asking for the grpc.aio server.
        found[variable("grpc_server")] = "on" if self.grpc_listener else "off"
        return found


def grpc_port_given(values: dict[str, Any]) -> dict[str, Any]:
    """A gRPC port given turns the grpc.aio server on where "auto" would leave it off."""
    if "grpc_port" in values and values.get("grpc_server", "auto") == "auto":
        return {**values, "grpc_server": "on"}
    return values


def variable(name: str) -> str:
    """The environment variable of the setting ``name``."""
    return f"PORTICO_{name.upper()}"


# PORTICO_* variables that are no setting of serve or proxy but are read by other parts: an
# image build's (app/services/kaas/build.py), the client commands', the node agent's, the pyvoy
# workers' and the test suite's.
OTHER_VARIABLES = frozenset(
    {
        "PORTICO_BUILD_DATE",
        "PORTICO_GIT_COMMIT",
        "PORTICO_GIT_TREE_STATE",
        "PORTICO_LOGIN_FILE",
        "PORTICO_TOKEN",
        "PORTICO_NODE_SERVER",
        "PORTICO_NODE_USERNAME",
        "PORTICO_NODE_PASSWORD",
        "PORTICO_NODE_CERT_DIR",
        "PORTICO_NODE_TLS_CA",
        "PORTICO_NODE_TLS_CERT",
        "PORTICO_NODE_TLS_KEY",
        "PORTICO_TEST_DATABASE_URL",
        "PORTICO_SHARED_DIR",
        "PORTICO_SCREENSHOTS",
        # `--server pyvoy`: the supervisor's socket and the server to build, set for the Envoy
        # processes it starts.
        "PORTICO_SUPERVISOR",
        "PORTICO_APPLICATION",
    }
)


def unread_variables(environ: Mapping[str, str]) -> list[str]:
    """A warning for each ``PORTICO_*`` variable that nothing reads, most likely a setting
    misspelt (``PORTICO_HTTP_PROT``), which would otherwise leave its setting at the default
    without a word; the setting it is closest to is named."""
    settings = {f.name.upper() for f in fields(Settings)}
    warnings = []
    for name in sorted(environ):
        if (
            not name.startswith("PORTICO_")
            or name.removeprefix("PORTICO_") in settings
            or name in OTHER_VARIABLES
        ):
            continue
        # Compared without the prefix they all share, which would make anything look close.
        close = close_names(name.removeprefix("PORTICO_"), settings, 1, 0.8)
        hint = f" (did you mean PORTICO_{close[0]}?)" if close else ""
        warnings.append(f"{name} is not a setting and is ignored{hint}")
    return warnings


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _parse(name: str, raw: str, default: Any) -> Any:
    kind = type(default).__name__
    if isinstance(default, bool):
        kind = "true or false (also 1/0, yes/no, on/off)"
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
    elif isinstance(default, tuple):
        return tuple(item.strip() for item in raw.split(",") if item.strip())
    elif isinstance(default, Path):
        return Path(raw)
    else:
        try:
            return type(default)(raw.strip())
        except ValueError:
            kind = {"int": "a whole number", "float": "a number"}.get(kind, kind)
    raise ConfigurationError(f"{variable(name)}: cannot read {raw!r}; allowed: {kind}")
