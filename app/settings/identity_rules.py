"""What the identity provider's settings may be (``PORTICO_OIDC_*``), the policy file's and the
proxy's identity forwarding: rules in the form of :mod:`app.settings.setting_rules`.

The provider's tokens are verified by :mod:`app.auth.oidc`; these rules only make sure a start
with a setting that would make it unsafe (plain http to a remote issuer, an algorithm that lets a
public key sign, a role map onto a role Portico does not have) stops with one line.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit

from app.settings.setting_rules import ConfigurationError, _allows, refuse

# The asymmetric algorithms a provider's tokens may be signed with: never ``none``, never an
# HMAC one (whose "secret" would be the provider's public key, which anyone can read).
ALGORITHMS = ("RS256", "RS384", "RS512", "ES256", "ES384", "PS256", "EdDSA")
# Kept in step with app/calls/callers.py's Role (the settings are below the call vocabulary).
ROLES = ("admin", "operator", "viewer", "node")
_CLAIM = re.compile(r"[A-Za-z0-9_:/+-]+(\.[A-Za-z0-9_:/+-]+){0,7}")
_URL_ALLOWED = "empty, or an https:// URL (http:// only to a loopback address or localhost)"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a URL's host) is this machine: plain http is fine there only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(variable: str, value: str) -> None:
    """``value`` is an https URL, or an http one to loopback; ConfigurationError otherwise."""
    try:
        parts = urlsplit(value)
        host = parts.hostname or ""
    except ValueError:
        refuse(variable, value, _URL_ALLOWED)
        return
    if not host or parts.query or parts.fragment:
        refuse(variable, value, _URL_ALLOWED)
    if parts.scheme == "https" or (parts.scheme == "http" and is_loopback(host)):
        return
    refuse(variable, value, _URL_ALLOWED)


@_allows(_URL_ALLOWED)
def url_or_empty(variable: str, value: Any) -> None:
    """Empty, or an https URL (http to loopback): an issuer or a JWKS address."""
    if not isinstance(value, str):
        refuse(variable, value, _URL_ALLOWED)
    if value:
        check_url(variable, value)


@_allows("a claim name, or a dotted path into the token's claims such as realm_access.roles")
def claim_path(variable: str, value: Any) -> None:
    """A claim, or a dotted path of at most eight claims (``realm_access.roles``)."""
    if not isinstance(value, str) or not _CLAIM.fullmatch(value):
        refuse(
            variable,
            value,
            "a claim name, or a dotted path into the token's claims such as realm_access.roles",
        )


_ROLE_MAP_ALLOWED = (
    "comma-separated provider-role=portico-role pairs, such as platform-admins=admin, each "
    f"mapping onto one of {', '.join(ROLES)}"
)


def parse_role_map(items: tuple[str, ...]) -> dict[str, str]:
    """``PORTICO_OIDC_ROLE_MAP`` as {provider role: Portico role} (checked already)."""
    return dict(item.rsplit("=", 1) for item in items)


@_allows(_ROLE_MAP_ALLOWED)
def role_map(variable: str, value: Any) -> None:
    """``provider-role=portico-role`` pairs, each onto one of Portico's roles."""
    seen: set[str] = set()
    for item in value:
        name, sep, role = item.rpartition("=")
        if not sep or not name or role not in ROLES:
            refuse(variable, item, _ROLE_MAP_ALLOWED)
        if name in seen:
            refuse(variable, item, "one entry per provider role")
        seen.add(name)


_ALGORITHMS_ALLOWED = f"comma-separated, at least one of {', '.join(ALGORITHMS)}"


@_allows(_ALGORITHMS_ALLOWED)
def algorithms(variable: str, value: Any) -> None:
    """A non-empty list of the asymmetric algorithms Portico verifies."""
    if not value:
        refuse(variable, "", _ALGORITHMS_ALLOWED)
    for item in value:
        if item not in ALGORITHMS:
            refuse(variable, item, _ALGORITHMS_ALLOWED)


def oidc_pairing(issuer: str, jwks_url: str, audience: str, proxy_auth: str, forward: str) -> None:
    """The provider's settings that only make sense together; the identity forwarding needs
    the gate to know an identity."""
    if (jwks_url or audience) and not issuer:
        name = "PORTICO_OIDC_JWKS_URL" if jwks_url else "PORTICO_OIDC_AUDIENCE"
        raise ConfigurationError(f"{name}: needs an issuer; allowed: only with PORTICO_OIDC_ISSUER")
    if issuer and not audience:
        # Without it, a token the provider issued to any other application would be accepted.
        raise ConfigurationError(
            "PORTICO_OIDC_AUDIENCE: must be set with PORTICO_OIDC_ISSUER; allowed: the audience "
            "the provider puts in tokens meant for Portico (its client id or API identifier)"
        )
    if forward != "none" and proxy_auth != "jwt":
        raise ConfigurationError(
            f"PORTICO_PROXY_FORWARD_IDENTITY: {forward!r} needs the gate; allowed: only with "
            "PORTICO_PROXY_AUTH=jwt (passthrough forwards the caller's credentials as they are)"
        )
