"""Field rules several APIs name: the words of their books (each API's own rules are in its
``field_rules`` module, beside its servicers)."""

from __future__ import annotations

from app.rules.field_rule import Rule

REQUIRED = Rule(required=True)
NOT_NEGATIVE = Rule(minimum=0)
PORT = Rule(required=True, minimum=1, maximum=65535)

# DNS-1123 labels: Kubernetes object names (KaaS clusters and pools).
DNS_LABEL = Rule(
    pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
    says="must consist of lower case letters, digits and '-', and start and end with a letter "
    "or digit",
    max_length=63,
)
