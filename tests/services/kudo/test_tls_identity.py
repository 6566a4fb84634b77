"""A node's verified TLS client certificate as its identity on gRPC: a real TLS gRPC server with
client CAs, built here from the running Portico's servicers and gate, and generated certificates."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
from collections.abc import AsyncIterator

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.grpc_server.server import create_server
from gen.scheduler import scheduler_pb2 as pb
from gen.scheduler import scheduler_pb2_grpc as pb_grpc
from tests.harness import Running, run, running
from tests.services.kudo.world import bearer, stored_node

Key = ec.EllipticCurvePrivateKey


def _key() -> Key:
    return ec.generate_private_key(ec.SECP256R1())


def _pem(key: Key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _issue(
    subject: str, key: Key, issuer: x509.Certificate | None, issuer_key: Key, *, ca: bool = False
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer.subject if issuer else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _bytes(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


class Pki:
    """A CA, a server certificate for 127.0.0.1 and client certificates it signs."""

    def __init__(self) -> None:
        self.ca_key = _key()
        self.ca = _issue("portico test CA", self.ca_key, None, self.ca_key, ca=True)
        self.server_key = _key()
        self.server = _issue("portico", self.server_key, self.ca, self.ca_key)

    def client(self, node: str) -> tuple[bytes, bytes]:
        key = _key()
        return _pem(key), _bytes(_issue(node, key, self.ca, self.ca_key))


@contextlib.asynccontextmanager
async def tls_grpc(server: Running, pki: Pki) -> AsyncIterator[int]:
    """The Portico's servicers and gate on a second gRPC server that requires client certs."""
    portico = server.portico
    tls_server, _ = create_server(
        "127.0.0.1:0",
        portico.registry,
        portico.servicers,
        authenticate=portico._authenticate,  # the same gate as the main server
    )
    credentials = grpc.ssl_server_credentials(
        [(_pem(pki.server_key), _bytes(pki.server))],
        root_certificates=_bytes(pki.ca),
        require_client_auth=True,
    )
    port = tls_server.add_secure_port("127.0.0.1:0", credentials)
    await tls_server.start()
    try:
        yield port
    finally:
        await tls_server.stop(None)


def test_a_verified_client_certificate_registers_its_node(tmp_path):
    async def scenario() -> None:
        pki = Pki()
        async with running(tmp_path, sim_nodes=0) as server, tls_grpc(server, pki) as port:
            token = await server.add_account("edge-tls", "node")
            key, cert = pki.client("edge-tls")
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_bytes(pki.ca), private_key=key, certificate_chain=cert
            )
            async with grpc.aio.secure_channel(f"127.0.0.1:{port}", credentials) as channel:
                stub = pb_grpc.NodeServiceStub(channel)
                reply = await stub.Register(pb.NodeRegisterRequest(), metadata=bearer(token))
                assert reply.code == 0 and reply.subnet
                again = await stub.Register(pb.NodeRegisterRequest(), metadata=bearer(token))
                assert again.subnet == reply.subnet
            assert await stored_node(server, "edge-tls") is not None

            # Still bound to the account: another node's certificate does not make it that node.
            key, cert = pki.client("edge-other")
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_bytes(pki.ca), private_key=key, certificate_chain=cert
            )
            async with grpc.aio.secure_channel(f"127.0.0.1:{port}", credentials) as channel:
                stub = pb_grpc.NodeServiceStub(channel)
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await stub.Register(pb.NodeRegisterRequest(), metadata=bearer(token))
                assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
            assert await stored_node(server, "edge-other") is None

            # Without TLS there is no certificate to stand in for the field.
            plain = pb_grpc.NodeServiceStub(server.channel)
            with pytest.raises(grpc.aio.AioRpcError) as missing:
                await plain.Register(pb.NodeRegisterRequest(), metadata=bearer(token))
            assert missing.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            assert "certificate" in missing.value.details()

    run(scenario())
