"""Settings: one object, read once from ``PORTICO_*`` environment variables.

Command-line flags override individual fields with :func:`dataclasses.replace`; nothing else
reads the environment, so tests build their own ``Settings`` and never patch globals.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any


class ConfigurationError(ValueError):
    """A setting makes starting unsafe or impossible; the message names the setting."""


DEFAULT_K8S_VERSIONS = ("1.29.10", "1.30.6", "1.31.2", "1.32.0")


@dataclass(frozen=True)
class Settings:
    """Everything Portico can be configured with; each field has a ``PORTICO_<NAME>`` variable."""

    http_host: str = "127.0.0.1"
    http_port: int = 8080
    grpc_host: str = "127.0.0.1"
    grpc_port: int = 50051
    data_dir: Path = Path("./data")
    # Server processes sharing the ports (and the database); background work runs on one.
    workers: int = 1
    # One log line per HTTP request; off by default, as it costs more than a small call.
    access_log: bool = False
    # Empty means SQLite in the data directory.
    database_url: str = ""
    # Events older than this are compacted away; a watch from before them gets OUT_OF_RANGE.
    event_retention_seconds: int = 86_400
    # Bootstrap admin password on first start; a random one is printed when empty.
    admin_password: str = ""
    # Empty means: generate once and keep it in the data directory (mode 0600).
    jwt_secret: str = ""
    token_ttl_seconds: int = 3600
    # scrypt's N for password hashes: strong by default; tests set it low to run fast.
    password_hash_cost: int = 2**17
    # "proto" emits field names as written in the .proto files; "camel" emits lowerCamelCase.
    json_names: str = "proto"
    # "reject" answers unknown JSON fields and query parameters with 400; "ignore" drops them.
    unknown_fields: str = "reject"
    max_body_bytes: int = 4 * 1024 * 1024
    cors_origins: tuple[str, ...] = ()
    # Seconds of wall time per step of the simulated infrastructure's clock.
    sim_step_seconds: float = 1.0
    k8s_versions: tuple[str, ...] = field(default=DEFAULT_K8S_VERSIONS)
    # Simulated MaaS: addresses of machines, and the share of machines that fail to deploy.
    machine_ip_pool: str = "10.20.0.0/16"
    sim_failure_ratio: float = 0.0
    sim_seed: int = 1
    # Each registered scheduler node gets a /24 out of this pool.
    node_subnet_pool: str = "10.128.0.0/16"
    # A node whose status stream ended is FAILED after this long without a report.
    node_grace_seconds: float = 30.0
    # In-process simulated scheduler nodes, so the embedded default has capacity.
    sim_nodes: int = 2
    demo: bool = False

    @property
    def effective_database_url(self) -> str:
        """The database URL, defaulting to SQLite in the data directory."""
        return self.database_url or f"sqlite:///{self.data_dir / 'portico.db'}"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every field from its ``PORTICO_<NAME>`` variable, keeping defaults for the rest."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = environ.get(f"PORTICO_{f.name.upper()}")
            if raw is not None:
                values[f.name] = _parse(f.name, raw, getattr(cls(), f.name))
        return cls(**values)


def _parse(name: str, raw: str, default: Any) -> Any:
    try:
        if isinstance(default, bool):
            if raw.lower() in {"1", "true", "yes", "on"}:
                return True
            if raw.lower() in {"0", "false", "no", "off", ""}:
                return False
            raise ValueError(raw)
        if isinstance(default, tuple):
            return tuple(item.strip() for item in raw.split(",") if item.strip())
        if isinstance(default, Path):
            return Path(raw)
        return type(default)(raw)
    except ValueError as exc:
        raise ConfigurationError(
            f"PORTICO_{name.upper()}: cannot read {raw!r} as {type(default).__name__}"
        ) from exc
