"""Kubeconfigs for simulated clusters: valid YAML with a server URL, CA data and a token.

The CA is a real self-signed certificate (ECDSA P-256) so tools that parse
``certificate-authority-data`` accept it; its private key is thrown away at once because no
simulated API server ever needs to present a certificate signed by it. The key and the token are
random, so a kubeconfig is issued once and persisted by the caller, never re-rendered.
"""

from __future__ import annotations

import base64
import ipaddress
import secrets
from datetime import datetime, timedelta

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
API_SERVER_PORT = 6443
CA_VALIDITY = timedelta(days=3650)  # kubeadm's CA lifetime


def server_url(control_plane_ip: str, port: int = API_SERVER_PORT) -> str:
    """The API server URL on a control-plane address (IPv6 in brackets)."""
    address = ipaddress.ip_address(control_plane_ip)
    host = f"[{address}]" if address.version == 6 else str(address)
    return f"https://{host}:{port}"


def issue_cluster_ca(cluster_name: str, *, not_before: datetime) -> bytes:
    """A PEM self-signed CA certificate named after the cluster, valid for ten years."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes"),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, f"portico-sim/{cluster_name}"),
        ]
    )
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_before + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM)


def issue_token() -> str:
    """A bearer token in the shape of a kubeadm bootstrap token's secret part, but longer."""
    return secrets.token_urlsafe(32)


def render_kubeconfig(
    cluster_name: str,
    control_plane_ip: str,
    *,
    ca_pem: bytes,
    token: str,
    user: str = "admin",
) -> str:
    """A kubeconfig (YAML) with one cluster, one token user and a context joining them."""
    user_name = f"{cluster_name}-{user}"
    context = f"{user}@{cluster_name}"
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster_name,
                "cluster": {
                    "server": server_url(control_plane_ip),
                    "certificate-authority-data": base64.b64encode(ca_pem).decode("ascii"),
                },
            }
        ],
        "users": [{"name": user_name, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": cluster_name, "user": user_name}}],
        "current-context": context,
        "preferences": {},
    }
    # libyaml's emitter when PyYAML has it: the pure-Python one took ~10 ms a kubeconfig, and
    # a backlog of new clusters issues a thousand of them in one reconciler pass.
    return yaml.dump(document, Dumper=_DUMPER, sort_keys=False, default_flow_style=False)


def issue_kubeconfig(cluster_name: str, control_plane_ip: str, *, now: datetime) -> str:
    """A fresh kubeconfig with a new CA and token; persist it, it cannot be rendered again."""
    return render_kubeconfig(
        cluster_name,
        control_plane_ip,
        ca_pem=issue_cluster_ca(cluster_name, not_before=now),
        token=issue_token(),
    )
