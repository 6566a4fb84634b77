"""Node identity: what a node registers with, and the node id it names.

Three forms, all read by :func:`read_node_identity`:

- A PEM X.509 certificate (what ``portico node-agent`` sends): the node id is its subject CN.
  It may be self-signed: the scheduler checks that it parses, names a node and is within its
  validity period, and remembers its SHA-256 fingerprint so that another certificate cannot take
  over a registered node id.
- An opaque node identifier, as the original node agent sent in the ``certificate`` field: a UUID
  (any case; kept in its canonical lower-case form) or a DNS label. It is the node id itself;
  registering it again is idempotent, and a certificate cannot take the id over (nor it a
  certificate's).
- The client certificate of a gRPC connection, when the server runs TLS with client CAs and gRPC
  verified it (:func:`verified_peer_certificate`): it stands in for an empty ``certificate``.
"""

from __future__ import annotations

import datetime
import hashlib
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import NameOID

# Node ids become names and route segments: hold them to DNS-1123 labels like every name.
_NODE_ID = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Simulated nodes' certificates are fixed, so a restarted server re-registers them unchanged.
_SIMULATED_VALIDITY = (
    datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC),
    datetime.datetime(2124, 1, 1, tzinfo=datetime.UTC),
)


class InvalidCertificate(ValueError):
    """The certificate cannot identify a node; the message says why."""


@dataclass(frozen=True)
class NodeCertificate:
    """What registration needs from a certificate: the node id and a fingerprint."""

    node_id: str
    fingerprint: str


def _load(pem: str) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(pem.encode())
    except ValueError as exc:
        raise InvalidCertificate("certificate is not a PEM-encoded X.509 certificate") from exc


def _node_id(certificate: x509.Certificate) -> str:
    names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not names:
        raise InvalidCertificate("certificate subject has no common name (CN) to name the node")
    node_id = str(names[0].value)
    if len(node_id) > 63 or not _NODE_ID.match(node_id):
        raise InvalidCertificate(
            f"certificate CN {node_id!r} is not a DNS label ([a-z0-9-], at most 63 characters)"
        )
    return node_id


def read_node_identity(text: str, now: datetime.datetime | None = None) -> NodeCertificate:
    """The node id and fingerprint of a PEM certificate or an opaque node identifier."""
    if "-----BEGIN" in text:
        return read_node_certificate(text, now)
    candidate = text.strip()
    try:
        node_id = str(uuid.UUID(candidate)) if len(candidate) == 36 else None
    except ValueError:
        node_id = None
    if node_id is None:
        if len(candidate) > 63 or not _NODE_ID.match(candidate):
            raise InvalidCertificate(
                "certificate is neither a PEM-encoded X.509 certificate nor a node identifier "
                "(a UUID, or a DNS label: [a-z0-9-], at most 63 characters)"
            )
        node_id = candidate
    # Not a hash of a credential: the identifier is its own proof (the account binding and the
    # bearer token guard it), and this keeps certificates and identifiers from taking each
    # other's ids over.
    return NodeCertificate(node_id, f"node-id:{node_id}")


def verified_peer_certificate(auth_context: Mapping[str, Iterable[bytes]]) -> str | None:
    """The PEM client certificate gRPC verified on this call's TLS connection, if there is one.

    gRPC only offers ``x509_pem_cert`` once the handshake checked it against the client CAs the
    server was configured with; plaintext connections and REST calls have none.
    """
    if list(auth_context.get("transport_security_type", ())) != [b"ssl"]:
        return None
    certificates = list(auth_context.get("x509_pem_cert", ()))
    return certificates[0].decode() if certificates else None


def read_node_certificate(pem: str, now: datetime.datetime | None = None) -> NodeCertificate:
    """The node id and fingerprint of a certificate that is valid at ``now``."""
    certificate = _load(pem)
    node_id = _node_id(certificate)
    now = now or datetime.datetime.now(datetime.UTC)
    if now < certificate.not_valid_before_utc:
        raise InvalidCertificate(
            f"certificate is not valid before {certificate.not_valid_before_utc}"
        )
    if now > certificate.not_valid_after_utc:
        raise InvalidCertificate(f"certificate expired at {certificate.not_valid_after_utc}")
    fingerprint = hashlib.sha256(certificate.public_bytes(serialization.Encoding.DER)).hexdigest()
    return NodeCertificate(node_id, fingerprint)


def _build(
    common_name: str,
    key: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey,
    not_before: datetime.datetime,
    not_after: datetime.datetime,
    serial: int,
) -> str:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(not_before)
        .not_valid_after(not_after)
    )
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    certificate = builder.sign(key, algorithm)
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


def self_signed(common_name: str, days: int = 365) -> tuple[str, str]:
    """A new key and a self-signed certificate for node ``common_name``: ``(cert, key)`` PEMs."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = _build(
        common_name,
        key,
        now - datetime.timedelta(minutes=5),
        now + datetime.timedelta(days=days),
        x509.random_serial_number(),
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return cert, key_pem


def simulated_certificate(common_name: str) -> str:
    """The same certificate for ``common_name`` every time (Ed25519 signs deterministically)."""
    seed = hashlib.sha256(f"portico simulated node {common_name}".encode()).digest()
    key = ed25519.Ed25519PrivateKey.from_private_bytes(seed)
    serial = int.from_bytes(seed[:8], "big") | 1
    return _build(common_name, key, *_SIMULATED_VALIDITY, serial)
