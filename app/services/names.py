"""Name rules shared by the services: DNS-1123 labels, and names made DNS-safe."""

from __future__ import annotations

import re

from app.rules import named_rules


def dns_label_problem(name: str) -> str | None:
    """Why ``name`` is not a DNS-1123 label (app.rules.named_rules.DNS_LABEL), or None."""
    return named_rules.DNS_LABEL.problem(name) if name else "is required"


def dns_name(*parts: str) -> str:
    """``web-1-0``: names joined and made DNS-safe (for URIs, path prefixes, container names)."""
    text = "-".join(p for p in parts if p)
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"
