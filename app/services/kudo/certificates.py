"""Node identity: a node registers with a PEM X.509 certificate; its subject CN is the node id."""

from __future__ import annotations

import re

from cryptography import x509
from cryptography.x509.oid import NameOID

# Node ids become names and route segments: hold them to DNS-1123 labels like every name.
_NODE_ID = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class InvalidCertificate(ValueError):
    """The certificate cannot identify a node; the message says why."""


def node_id_from_pem(pem: str) -> str:
    """The node id (subject common name) of a PEM certificate."""
    try:
        certificate = x509.load_pem_x509_certificate(pem.encode())
    except ValueError as exc:
        raise InvalidCertificate("certificate is not a PEM-encoded X.509 certificate") from exc
    names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not names:
        raise InvalidCertificate("certificate subject has no common name (CN) to name the node")
    node_id = str(names[0].value)
    if len(node_id) > 63 or not _NODE_ID.match(node_id):
        raise InvalidCertificate(
            f"certificate CN {node_id!r} is not a DNS label ([a-z0-9-], at most 63 characters)"
        )
    return node_id
