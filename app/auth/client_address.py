"""The address a call comes from, believing forwarding headers only from trusted proxies.

Behind a proxy every caller's connection comes from the proxy, so throttling by peer address
would put all of them under one key. ``Forwarded`` (RFC 7239) or ``X-Forwarded-For`` name the
hops; they are read only when the peer is one of ``PORTICO_TRUSTED_PROXIES``, and then from the
right, skipping trusted proxies: the first address that is not one is the client (anything to
its left was written by the client and proves nothing).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def trusted_networks(cidrs: Iterable[str]) -> tuple[Network, ...]:
    """Parse ``PORTICO_TRUSTED_PROXIES`` entries (validated at start)."""
    return tuple(ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


def peer_address(peer: str) -> str:
    """The address part of a gRPC peer string (``ipv4:10.0.0.1:5000`` → ``10.0.0.1``)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv6":
        return rest.rsplit(":", 1)[0].strip("[]")
    if kind == "ipv4":
        return rest.rsplit(":", 1)[0]
    return peer


def client_address(
    peer: str, metadata: Iterable[tuple[str, str | bytes]], trusted: Sequence[Network]
) -> str:
    """The calling client's address: the peer's, or the forwarded one if the peer is trusted."""
    nearest = peer_address(peer)
    if not trusted or not _is_trusted(nearest, trusted):
        return nearest
    for hop in reversed(_forwarded_hops(metadata)):
        parsed = _parse(hop)
        if parsed is None:
            # "unknown", an obfuscated name or garbage: the last trusted hop is all we know.
            return nearest
        if not _is_trusted(str(parsed), trusted):
            return str(parsed)
        nearest = str(parsed)
    return nearest


def _is_trusted(address: str, trusted: Sequence[Network]) -> bool:
    parsed = _parse(address)
    return parsed is not None and any(parsed in network for network in trusted)


def _parse(text: str) -> Address | None:
    text = text.strip().strip('"')
    if text.startswith("["):  # [v6] or [v6]:port
        text = text[1:].split("]", 1)[0]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def _forwarded_hops(metadata: Iterable[tuple[str, str | bytes]]) -> list[str]:
    """The hops, client first: from ``Forwarded`` if any proxy sent it, else
    ``X-Forwarded-For``."""
    forwarded: list[str] = []
    x_forwarded_for: list[str] = []
    for key, value in metadata:
        if not isinstance(value, str):
            continue
        if key.lower() == "forwarded":
            for element in value.split(","):
                for pair in element.split(";"):
                    name, _, found = pair.partition("=")
                    if name.strip().lower() == "for":
                        forwarded.append(found)
        elif key.lower() == "x-forwarded-for":
            x_forwarded_for.extend(hop for hop in value.split(",") if hop.strip())
    return forwarded or x_forwarded_for


def throttle_address(address: str) -> str:
    """The unit an address is throttled as: itself, or its /64 for IPv6 (where one client
    commonly holds a whole /64 and could otherwise rotate through it)."""
    parsed = _parse(address)
    if isinstance(parsed, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed) if parsed is not None else address[:100]
