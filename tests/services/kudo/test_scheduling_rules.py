"""The scheduler's pure rules: node identity, subnets, placement and the instance state machine."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.services.kudo.certificates import InvalidCertificate, read_node_certificate
from app.services.kudo.lifecycle import IllegalTransition, after_request
from app.services.kudo.placement import Capacity, NodeRoom, best_fit
from app.services.kudo.subnets import SubnetPoolExhausted, address_in, allocate_subnet
from gen.scheduler import scheduler_pb2 as pb


def _pem(common_name: str | None) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "portico-test")]
    if common_name is not None:
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    name = x509.Name(attrs)
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def test_node_id_is_the_subject_common_name():
    assert read_node_certificate(_pem("node-a")).node_id == "node-a"


@pytest.mark.parametrize(
    ("pem", "problem"),
    [
        ("garbage", "not a PEM-encoded X.509"),
        ("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "not a PEM"),
        (None, "no common name"),
        ("Bad_Name!", "not a DNS label"),
    ],
)
def test_certificates_that_cannot_name_a_node_are_refused(pem, problem):
    text = pem if pem in {"garbage"} or (pem and pem.startswith("-----")) else _pem(pem)
    with pytest.raises(InvalidCertificate, match=problem):
        read_node_certificate(text)


def test_subnets_are_distinct_and_the_pool_runs_out():
    taken: list[str] = []
    for _ in range(4):
        taken.append(allocate_subnet("10.128.0.0/22", taken))
    assert taken == ["10.128.0.0/24", "10.128.1.0/24", "10.128.2.0/24", "10.128.3.0/24"]
    with pytest.raises(SubnetPoolExhausted):
        allocate_subnet("10.128.0.0/22", taken)
    assert allocate_subnet("10.128.0.0/22", taken[1:]) == "10.128.0.0/24"


def test_instance_addresses_come_from_the_node_subnet():
    assert address_in("10.128.3.0/24", 1) == "10.128.3.2"
    with pytest.raises(SubnetPoolExhausted):
        address_in("10.128.3.0/24", 254)


def _node(name, cpu, mem, disk, reserved=(0, 0, 0)):
    return NodeRoom(name, Capacity(cpu, mem, disk), Capacity(*reserved))


def test_best_fit_picks_the_tightest_node_that_has_room():
    nodes = [_node("big", 16, 64, 500), _node("small", 4, 8, 100), _node("tiny", 1, 1, 10)]
    assert best_fit(nodes, Capacity(2, 4, 20)).name == "small"
    assert best_fit(nodes, Capacity(8, 16, 100)).name == "big"
    assert best_fit(nodes, Capacity(32, 1, 1)) is None


def test_reservations_count_against_the_limit_and_ties_go_by_name():
    nodes = [_node("b", 4, 8, 100), _node("a", 4, 8, 100), _node("c", 4, 8, 100, (3, 0, 0))]
    assert best_fit(nodes, Capacity(2, 2, 2)).name == "a"
    assert best_fit([nodes[2]], Capacity(2, 1, 1)) is None


@pytest.mark.parametrize(
    ("state", "request_", "expected"),
    [
        (pb.STOPPED, "start", pb.STARTING),
        (pb.RUNNING, "stop", pb.STOPPING),
        (pb.STARTING, "stop", pb.STOPPING),
        (pb.RUNNING, "destroy", pb.DESTROYING),
        (pb.SCHEDULING, "destroy", pb.DESTROYING),
        (pb.FAILED, "destroy", pb.DESTROYING),
    ],
)
def test_allowed_requests(state, request_, expected):
    assert after_request(state, request_) == expected


@pytest.mark.parametrize(
    ("state", "request_"),
    [
        (pb.RUNNING, "start"),
        (pb.SCHEDULING, "start"),
        (pb.STOPPED, "stop"),
        (pb.TERMINATED, "stop"),
        (pb.TERMINATED, "destroy"),
        (pb.DESTROYING, "destroy"),
        (pb.FAILED, "start"),
    ],
)
def test_illegal_requests_name_the_state(state, request_):
    with pytest.raises(IllegalTransition, match=pb.Status.Name(state)):
        after_request(state, request_)
