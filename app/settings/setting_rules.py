"""What each setting may be: small rules that name the variable and the allowed values.

A rule is called as ``rule(variable, value)`` and raises :class:`ConfigurationError` with one
line, ``PORTICO_X: <value> is not allowed; allowed: <what is>``, so an operator can fix the
start without reading code.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Callable
from typing import Any

Rule = Callable[[str, Any], None]

# What each rule allows, in the words of its refusals: the settings reference shows them.
_ALLOWED: dict[Rule, str] = {}


def allowed(rule: Rule) -> str:
    """The values ``rule`` accepts, as its refusal says them."""
    return _ALLOWED[rule]


def _allows(text: str) -> Callable[[Rule], Rule]:
    def mark(rule: Rule) -> Rule:
        _ALLOWED[rule] = text
        return rule

    return mark


# Kept in step with app/auth/passwords.py: the services read settings, and the import contracts
# keep them from reaching the auth package through this module.
_MIN_PASSWORD_BYTES = 6
_MAX_PASSWORD_BYTES = 70
_MIN_SECRET_BYTES = 32  # HS256 wants a key as long as its hash
_MIN_TOKEN_CHARS = 16  # a bearer token for /metrics
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_HOSTNAME = re.compile(r"^[A-Za-z0-9.-]{1,253}$")


class ConfigurationError(ValueError):
    """A setting makes starting unsafe or impossible; the message names the setting."""


def refuse(variable: str, value: Any, allowed: str) -> None:
    """Raise the one-line error for ``value`` of ``variable``."""
    shown = value if isinstance(value, int | float) and not isinstance(value, bool) else repr(value)
    raise ConfigurationError(f"{variable}: {shown} is not allowed; allowed: {allowed}")


def _number(variable: str, value: Any, allowed: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        refuse(variable, value, allowed)
    if isinstance(value, float) and not math.isfinite(value):
        refuse(variable, value, allowed)


def _shown(number: float) -> str:
    """A bound as an operator types it: 1073741824, 0.001 (not 1.07374e+09)."""
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def between(low: float, high: float) -> Rule:
    """A number from ``low`` to ``high``, both included."""

    whole = isinstance(low, int) and isinstance(high, int)
    allowed = f"a {'whole ' if whole else ''}number from {_shown(low)} to {_shown(high)}"

    @_allows(allowed)
    def rule(variable: str, value: Any) -> None:
        _number(variable, value, allowed)
        if not low <= value <= high or (whole and not isinstance(value, int)):
            refuse(variable, value, allowed)

    return rule


def at_least(low: int) -> Rule:
    """A whole number of at least ``low``."""

    allowed = f"a whole number of at least {low}"

    @_allows(allowed)
    def rule(variable: str, value: Any) -> None:
        _number(variable, value, allowed)
        if value < low:
            refuse(variable, value, allowed)

    return rule


@_allows("a whole number")
def any_int(variable: str, value: Any) -> None:
    """Any whole number."""
    if isinstance(value, bool) or not isinstance(value, int):
        refuse(variable, value, "a whole number")


def power_of_two(low: int, high: int) -> Rule:
    """A power of two from ``low`` to ``high`` (scrypt's cost)."""

    allowed = f"a power of two from {low} to {high}"

    @_allows(allowed)
    def rule(variable: str, value: Any) -> None:
        any_int(variable, value)
        if not low <= value <= high or value & (value - 1):
            refuse(variable, value, allowed)

    return rule


def one_of(*choices: str) -> Rule:
    """Exactly one of ``choices``."""

    @_allows(", ".join(choices))
    def rule(variable: str, value: Any) -> None:
        if value not in choices:
            refuse(variable, value, ", ".join(choices))

    return rule


@_allows("an IP address or a host name")
def hostname(variable: str, value: Any) -> None:
    """An IP address or a host name."""
    allowed = "an IP address or a host name"
    if not isinstance(value, str) or not value:
        refuse(variable, value, allowed)
    try:
        ipaddress.ip_address(value)
    except ValueError:
        if not _HOSTNAME.match(value):
            refuse(variable, value, allowed)


@_allows("empty or a full method name such as edgeproto.OperatorApi.CreateOperator")
def method_name_or_empty(variable: str, value: Any) -> None:
    """Empty, or a full RPC name (``package.Service.Method``); main checks that it is served."""
    allowed = "empty or a full method name such as edgeproto.OperatorApi.CreateOperator"
    if not isinstance(value, str):
        refuse(variable, value, allowed)
    if value and not re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*){2,}", value):
        refuse(variable, value, allowed)


@_allows(f"empty, or {_MIN_PASSWORD_BYTES}-{_MAX_PASSWORD_BYTES} bytes")
def password_or_empty(variable: str, value: Any) -> None:
    """Empty (generate one) or a password Login would accept."""
    if value and not _MIN_PASSWORD_BYTES <= len(value.encode()) <= _MAX_PASSWORD_BYTES:
        refuse(
            variable,
            "(hidden)",
            f"empty, or {_MIN_PASSWORD_BYTES}-{_MAX_PASSWORD_BYTES} bytes",
        )


@_allows(f"empty, or at least {_MIN_SECRET_BYTES} bytes")
def secret_or_empty(variable: str, value: Any) -> None:
    """Empty (generate one) or a signing secret of at least 32 bytes."""
    if value and len(value.encode()) < _MIN_SECRET_BYTES:
        refuse(variable, "(hidden)", f"empty, or at least {_MIN_SECRET_BYTES} bytes")


@_allows("empty (SQLite in the data folder), sqlite:///<file> or postgresql://user:pass@host/db")
def database_url(variable: str, value: Any) -> None:
    """Empty (SQLite in the data folder), ``sqlite:///<file>`` or ``postgresql://...``."""
    allowed = (
        "empty (SQLite in the data folder), sqlite:///<file> or postgresql://user:pass@host/db"
    )
    if not value:
        return
    scheme = value.split(":", 1)[0].lower()
    if scheme.startswith(("postgresql", "postgres")):
        return
    if scheme.startswith("sqlite") and value.split("://", 1)[-1].strip("/") not in {"", ":memory:"}:
        return
    # The URL may hold a password: name only its scheme.
    refuse(variable, f"{scheme}:...", allowed)


@_allows("comma-separated origins like https://dash.example, or *")
def origins(variable: str, value: Any) -> None:
    """Comma-separated ``http(s)://host[:port]`` origins, or ``*``."""
    for origin in value:
        if origin != "*" and not re.match(r"^https?://[^/\s]+$", origin):
            refuse(variable, origin, "comma-separated origins like https://dash.example, or *")


@_allows("empty, or a path like /api or /rpc/v1 (no trailing slash)")
def path_prefix(variable: str, value: Any) -> None:
    """Empty, or an absolute URL path without a trailing slash, like ``/api``."""
    if value and not re.match(r"^(/[A-Za-z0-9._~-]+)+$", value):
        refuse(variable, value, "empty, or a path like /api or /rpc/v1 (no trailing slash)")


@_allows("comma-separated IP addresses or CIDR networks (10.0.0.0/8)")
def cidr_list(variable: str, value: Any) -> None:
    """Comma-separated addresses or CIDR networks."""
    for item in value:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            refuse(variable, item, "comma-separated IP addresses or CIDR networks (10.0.0.0/8)")


def subnet(max_prefix: int) -> Rule:
    """An IPv4 network no smaller than ``/max_prefix``."""

    allowed = f"an IPv4 network in CIDR form, /{max_prefix} or larger (10.20.0.0/16)"

    @_allows(allowed)
    def rule(variable: str, value: Any) -> None:
        try:
            network = ipaddress.ip_network(value, strict=True)
        except ValueError:
            refuse(variable, value, allowed)
        if network.version != 4 or network.prefixlen > max_prefix:
            refuse(variable, value, allowed)

    return rule


@_allows("comma-separated versions like 1.31.2")
def dotted_versions(variable: str, value: Any) -> None:
    """A non-empty comma-separated list of ``X.Y.Z`` versions."""
    allowed = "comma-separated versions like 1.31.2"
    if not value:
        refuse(variable, "", allowed)
    for version in value:
        if not _VERSION.match(version):
            refuse(variable, version, allowed)


@_allows("empty, or the path of a readable PEM file")
def file_or_empty(variable: str, value: Any) -> None:
    """Empty, or a readable file."""
    if value and not (os.path.isfile(value) and os.access(value, os.R_OK)):
        refuse(variable, value, "empty, or the path of a readable PEM file")


@_allows("comma-separated host:port gRPC servers, such as 127.0.0.1:50051 or api.example:443")
def upstream_list(variable: str, value: Any) -> None:
    """Comma-separated ``host:port`` gRPC servers (``[v6]:port`` for IPv6 addresses)."""
    allowed = "comma-separated host:port gRPC servers, such as 127.0.0.1:50051 or api.example:443"
    for item in value:
        host, sep, port = item.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
            refuse(variable, item, allowed)
        try:
            ipaddress.ip_address(host)
        except ValueError:
            if not _HOSTNAME.match(host):
                refuse(variable, item, allowed)


def upstream_tls_pairing(tls: bool, ca: str, cert: str, key: str) -> None:
    """A client certificate needs its key and the reverse; both need TLS to the upstream."""
    if bool(cert) != bool(key):
        missing = "PORTICO_UPSTREAM_KEY" if cert else "PORTICO_UPSTREAM_CERT"
        raise ConfigurationError(
            f"{missing}: must be set too; allowed: PORTICO_UPSTREAM_CERT and PORTICO_UPSTREAM_KEY "
            "together"
        )
    if cert and not (tls or ca):
        raise ConfigurationError(
            "PORTICO_UPSTREAM_CERT: needs TLS to the upstream; allowed: only with "
            "PORTICO_UPSTREAM_TLS=true or PORTICO_UPSTREAM_CA"
        )


@_allows("empty, or the path of a readable FileDescriptorSet file")
def descriptor_set_or_empty(variable: str, value: Any) -> None:
    """Empty, or a readable file (``protoc --descriptor_set_out --include_imports``)."""
    if value and not (os.path.isfile(value) and os.access(value, os.R_OK)):
        refuse(variable, value, "empty, or the path of a readable FileDescriptorSet file")


def tls_pairing(cert: str, key: str, client_ca: str) -> None:
    """A certificate needs its key and the reverse; client verification needs TLS."""
    if bool(cert) != bool(key):
        missing = "PORTICO_TLS_KEY" if cert else "PORTICO_TLS_CERT"
        raise ConfigurationError(
            f"{missing}: must be set too; allowed: PORTICO_TLS_CERT and PORTICO_TLS_KEY together"
        )
    if client_ca and not cert:
        raise ConfigurationError(
            "PORTICO_TLS_CLIENT_CA: needs TLS; allowed: only with PORTICO_TLS_CERT and _KEY"
        )


@_allows(f"empty, or {_MIN_TOKEN_CHARS}+ characters without spaces")
def token_or_empty(variable: str, value: Any) -> None:
    """Empty (none) or a bearer token: 16+ characters without spaces."""
    if value and (len(value) < _MIN_TOKEN_CHARS or any(c.isspace() for c in value)):
        refuse(variable, "(hidden)", f"empty, or {_MIN_TOKEN_CHARS}+ characters without spaces")


def metrics_apart(metrics: bool, port: int, token: str, taken: tuple[int, ...]) -> None:
    """The metrics port is none of the API's ports; port and token need metrics on."""
    if port and port in taken:
        refuse("PORTICO_METRICS_PORT", port, "0, or a port other than the HTTP and gRPC ports")
    if (port or token) and not metrics:
        raise ConfigurationError(
            "PORTICO_METRICS_PORT / PORTICO_METRICS_TOKEN: need metrics; allowed: only with "
            "PORTICO_METRICS=true"
        )


# The largest rate and burst a rate limit may name: far above what one server answers, so a
# typo of a few digits too many is refused instead of silently meaning "unlimited".
MAX_RATE = 1_000_000
_RATE_OVERRIDE = re.compile(
    r"(?P<service>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)/(?P<method>[A-Za-z_]\w*)"
    r"=(?P<rate>\d+(?:\.\d+)?)(?::(?P<burst>\d+))?"
)
_RATE_OVERRIDE_ALLOWED = (
    "comma-separated package.Service/Method=rate or =rate:burst entries, one per method, such "
    f"as cnct.kaas.api.Cluster/CreateCluster=1:5 (rate 0 to {MAX_RATE}, 0: unlimited; burst 1 "
    f"to {MAX_RATE})"
)


def default_burst(rate: float) -> int:
    """The burst of a limit that names none: one second of the rate, at least one call."""
    return max(1, math.ceil(rate))


def parse_rate_override(item: str) -> tuple[str, float, int] | None:
    """``package.Service/Method=rate[:burst]`` as (``package.Service.Method``, rate, burst);
    None when it is not one (or out of bounds)."""
    found = _RATE_OVERRIDE.fullmatch(item.strip())
    if found is None:
        return None
    rate = float(found["rate"])
    burst = int(found["burst"]) if found["burst"] else default_burst(rate)
    if rate > MAX_RATE or not 1 <= burst <= MAX_RATE:
        return None
    return f"{found['service']}.{found['method']}", rate, burst


@_allows(_RATE_OVERRIDE_ALLOWED)
def rate_overrides(variable: str, value: Any) -> None:
    """Per-method rate limits; ``app.main`` checks that each names a served method."""
    seen: set[str] = set()
    for item in value:
        parsed = parse_rate_override(item)
        if parsed is None:
            refuse(variable, item, _RATE_OVERRIDE_ALLOWED)
            return
        if parsed[0] in seen:
            refuse(variable, item, "one entry per method")
        seen.add(parsed[0])


def rate_limit_pairing(rate: float, burst: int) -> None:
    """A burst means nothing without a rate: refused rather than silently unlimited."""
    if burst and not rate:
        raise ConfigurationError(
            "PORTICO_RATE_LIMIT_BURST: needs a rate; allowed: only with "
            "PORTICO_RATE_LIMIT_PER_SECOND above 0"
        )
