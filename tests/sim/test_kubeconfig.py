"""Kubeconfigs: YAML kubectl can read, naming the cluster, its server, a real CA and a token."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest
import yaml
from cryptography import x509

from app.sim.kubeconfig import (
    issue_cluster_ca,
    issue_kubeconfig,
    issue_token,
    render_kubeconfig,
    server_url,
)

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def kubeconfig() -> dict:
    return yaml.safe_load(issue_kubeconfig("prod", "10.20.0.2", now=NOW))


def test_it_names_the_cluster_and_points_at_the_first_control_plane(kubeconfig):
    assert kubeconfig["apiVersion"] == "v1" and kubeconfig["kind"] == "Config"
    [cluster] = kubeconfig["clusters"]
    assert cluster["name"] == "prod"
    assert cluster["cluster"]["server"] == "https://10.20.0.2:6443"


def test_the_current_context_joins_the_cluster_and_a_token_user(kubeconfig):
    contexts = {c["name"]: c["context"] for c in kubeconfig["contexts"]}
    current = contexts[kubeconfig["current-context"]]
    assert current["cluster"] == "prod"
    users = {u["name"]: u["user"] for u in kubeconfig["users"]}
    assert len(users[current["user"]]["token"]) >= 32


def test_the_ca_data_is_a_self_signed_ca_certificate(kubeconfig):
    pem = base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"])
    cert = x509.load_pem_x509_certificate(pem)
    assert cert.issuer == cert.subject
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert cert.not_valid_before_utc == NOW
    assert "prod" in cert.subject.rfc4514_string()


def test_each_issue_gets_its_own_token_and_ca():
    assert issue_token() != issue_token()
    assert issue_cluster_ca("a", not_before=NOW) != issue_cluster_ca("a", not_before=NOW)


def test_rendering_is_plain_yaml_of_what_it_is_given():
    text = render_kubeconfig("edge-1", "10.0.0.5", ca_pem=b"PEM", token="t0k3n", user="ops")
    loaded = yaml.safe_load(text)
    assert loaded["clusters"][0]["cluster"]["certificate-authority-data"] == "UEVN"
    assert loaded["users"] == [{"name": "edge-1-ops", "user": {"token": "t0k3n"}}]
    assert loaded["current-context"] == "ops@edge-1"


def test_ipv6_servers_are_bracketed():
    assert server_url("fd00::2") == "https://[fd00::2]:6443"
    assert server_url("10.1.2.3", port=443) == "https://10.1.2.3:443"


def test_a_bad_address_is_refused():
    with pytest.raises(ValueError):
        server_url("not-an-ip")
