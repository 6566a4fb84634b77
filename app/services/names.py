"""Name rules shared by the services: DNS-1123 labels and Kubernetes label syntax."""

from __future__ import annotations

import re

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_PART = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def dns_label_problem(name: str) -> str | None:
    """Why ``name`` is not a DNS-1123 label, or None when it is one."""
    if not name:
        return "is required"
    if len(name) > 63:
        return f"must be at most 63 characters (got {len(name)})"
    if not _DNS_LABEL.match(name):
        return (
            f"{name!r} must consist of lower case letters, digits and '-', "
            "and start and end with a letter or digit"
        )
    return None


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a Kubernetes label key (``[prefix/]name``), or None."""
    prefix, _, name = key.rpartition("/")
    if not name or len(name) > 63 or not _LABEL_PART.match(name):
        return f"label key {key!r}: the name part must be 1-63 characters of [A-Za-z0-9-_.]"
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"label key {key!r}: the prefix must be a DNS subdomain"
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a Kubernetes label value (may be empty), or None."""
    if value and (len(value) > 63 or not _LABEL_PART.match(value)):
        return f"label value {value!r} must be at most 63 characters of [A-Za-z0-9-_.]"
    return None


def dns_name(*parts: str) -> str:
    """``web-1-0``: names joined and made DNS-safe (for URIs, path prefixes, container names)."""
    text = "-".join(p for p in parts if p)
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"
