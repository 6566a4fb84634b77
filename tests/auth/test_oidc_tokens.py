"""Tokens of an identity provider (OIDC/JWKS) at the gate, beside Portico's own: each algorithm
a provider signs with, roles from a claim, and the hostile tokens and providers (wrong issuer or
audience, expired, not yet valid, unknown or rotated keys, ``alg: none``, HS256 signed with the
public key, a JWKS that times out or is huge, a provider down)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import time
import uuid
from typing import Any

import grpc
import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from app.gateway.registry import Registry
from tests.auth.identity_provider import (
    AUDIENCE,
    Provider,
    SigningKey,
    provider_settings,
    serving_provider,
)
from tests.grpc_calls import grpc_call
from tests.harness import Running, eventually, run, running
from tests.reliability.server import free_port

REGISTRY = Registry.from_package("gen")
VERSION = "/api/v1/version"  # read-only: any role may call it
CREATE = "/api/v1/cluster"  # an operator's


async def call(server: Running, token: str, path: str = VERSION) -> tuple[int, str]:
    """The HTTP status of a call with ``token``, and the error message, if any."""
    headers = {"authorization": f"Bearer {token}"}
    if path == CREATE:
        reply = await server.http.post(path, json={}, headers=headers)
    else:
        reply = await server.http.get(path, headers=headers)
    message = reply.json().get("message", "") if reply.status_code != 200 else ""
    return reply.status_code, message


def _unsigned(claims: dict[str, Any], header: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part(header)}.{part(claims)}."


def _hs256_with_public_key(provider: Provider) -> str:
    """The classic confusion: HS256 whose secret is the provider's public key (PEM)."""
    key = provider.keys[0]
    pem = key.private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = {"alg": "HS256", "typ": "JWT", "kid": key.kid}
    signing_input = _unsigned(provider.claims(), header)[:-1].encode()
    signature = hmac.new(pem, signing_input, hashlib.sha256).digest()
    return signing_input.decode() + "." + base64.urlsafe_b64encode(signature).rstrip(b"=").decode()


def test_a_token_of_each_algorithm_is_admitted_with_the_role_its_claim_grants(tmp_path):
    algorithms = ("RS256", "RS384", "RS512", "ES256", "ES384", "PS256", "EdDSA")

    async def scenario() -> None:
        async with (
            serving_provider(*algorithms) as provider,
            running(tmp_path, **provider_settings(provider)) as server,
        ):
            for key in provider.keys:
                token = provider.token(key)
                assert await call(server, token) == (200, ""), key.algorithm
            # A viewer may not create; the role map and a dotted claim path make an operator.
            viewer = provider.token()
            status, message = await call(server, viewer, CREATE)
            assert status == 403 and "role 'viewer' may not call CreateCluster" in message
            no_role = provider.token(roles=["someone-else"])
            assert (await call(server, no_role))[0] == 403

    run(scenario())


def test_roles_from_a_dotted_claim_and_the_role_map(tmp_path):
    async def scenario() -> None:
        async with serving_provider() as provider:
            settings = provider_settings(
                provider,
                oidc_roles_claim="realm_access.roles",
                oidc_role_map=("platform-admins=admin", "ops=operator"),
            )
            async with running(tmp_path, **settings) as server:
                token = provider.token(realm_access={"roles": ["ops", "offline_access"]})
                status, message = await call(server, token, CREATE)
                # Past the gate (an operator may create): the request itself is what is wrong.
                assert status == 400, message
                flat = provider.token(roles=["operator"])  # not at the configured path
                assert (await call(server, flat, CREATE))[0] == 403
                gate = server.portico.gate
                assert gate is not None and gate.provider is not None
                role = gate.provider.role({"realm_access": {"roles": ["platform-admins", "ops"]}})
                assert role == "admin"

    run(scenario())


ALLOWED = ("RS256", "ES384")


def _with_header(token: str, **changes: Any) -> str:
    """``token`` with its header changed (its signature no longer matches)."""
    header, rest = token.split(".", 1)
    found = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    encoded = json.dumps({**found, **changes}).encode()
    return base64.urlsafe_b64encode(encoded).rstrip(b"=").decode() + "." + rest


def test_hostile_tokens_are_refused_each_with_its_reason(tmp_path):
    async def scenario() -> None:
        async with (
            serving_provider("RS256", "ES256") as provider,
            running(tmp_path, **provider_settings(provider, oidc_algorithms=ALLOWED)) as server,
        ):
            rsa_key, ec_key = provider.keys
            now = int(time.time())
            stranger = SigningKey("RS256", kid=rsa_key.kid)  # the right kid, another key
            cases = {
                "wrong issuer": (provider.token(iss="https://evil.example"), "issuer"),
                "wrong audience": (provider.token(aud="another-app"), "audience"),
                "expired": (provider.token(exp=now - 120, iat=now - 900), "expired"),
                "not yet valid": (provider.token(nbf=now + 600), "not yet valid"),
                "issued in the future": (provider.token(iat=now + 600), "not yet valid (iat)"),
                "no expiry": (provider.token(exp=None), "exp"),
                "unknown kid": (provider.token(headers={"kid": "nobody"}), "key id"),
                "signed by another key": (provider.token(stranger), "Signature"),
                "alg none": (
                    _unsigned(provider.claims(), {"alg": "none", "kid": rsa_key.kid}),
                    "algorithm 'none' is not allowed",
                ),
                "HS256 with the public key": (
                    _hs256_with_public_key(provider),
                    "not signed by this server",
                ),
                "an algorithm not allowed": (provider.token(ec_key), "'ES256' is not allowed"),
                "an RSA key under an ES algorithm header": (
                    _with_header(provider.token(), alg="ES384"),
                    "not ES384",
                ),
                "too large": (provider.token(padding="x" * 20_000), "too large"),
                "not a JWT": ("abc.def", "malformed"),
            }
            for name, (token, reason) in cases.items():
                status, message = await call(server, token)
                assert status == 401 and reason in message, f"{name}: {status} {message}"
            # Portico's own tokens are not affected.
            assert await call(server, await server.login()) == (200, "")

    run(scenario())


def test_a_key_published_after_start_is_fetched_and_a_flood_of_kids_fetches_little(tmp_path):
    async def scenario() -> None:
        async with (
            serving_provider() as provider,
            running(tmp_path, **provider_settings(provider)) as server,
        ):
            assert await call(server, provider.token()) == (200, "")
            rotated = SigningKey("ES256")
            provider.keys.append(rotated)
            await asyncio.sleep(1.0)  # the refresh interval, so the next unknown kid may fetch
            assert await call(server, provider.token(rotated)) == (200, "")
            fetches = provider.jwks_fetches
            started = time.monotonic()
            random_kids = [
                provider.token(headers={"kid": uuid.uuid4().hex}, sub=f"u{i}") for i in range(300)
            ]
            answers = await asyncio.gather(*(call(server, t) for t in random_kids))
            assert {status for status, _ in answers} == {401}
            # One interval of 1 s: at most a fetch or two whatever the number of kids.
            elapsed = time.monotonic() - started
            assert provider.jwks_fetches - fetches <= 2 + int(elapsed), provider.jwks_fetches

    run(scenario())


def test_a_jwks_that_times_out_refuses_its_tokens_quickly_and_stalls_no_one(tmp_path, caplog):
    async def scenario() -> None:
        async with serving_provider() as provider:
            provider.delay_seconds = 30.0
            settings = provider_settings(provider, oidc_jwks_timeout_seconds=0.5)
            async with running(tmp_path, **settings) as server:
                own = await server.login()
                waiting = asyncio.ensure_future(call(server, provider.token()))
                # Meanwhile Portico's own tokens are answered at once.
                for _ in range(20):
                    assert await call(server, own) == (200, "")
                assert not waiting.done() or (await waiting)[0] == 401
                status, message = await asyncio.wait_for(waiting, 5.0)
                assert status == 401 and "cannot be fetched now" in message, message
                assert "no answer within 0.5 s" in message

                async def reported() -> Any:
                    reply = await server.http.get("/readyz?verbose")
                    found = reply.json().get("identity_provider", {})
                    return reply.status_code == 200 and found.get("status") == "unreachable"

                await eventually(reported, what="/readyz says the provider is unreachable")
                metrics = (await server.http.get("/metrics")).text
                assert "portico_oidc_provider_up 0.0" in metrics
                assert 'portico_oidc_key_fetches_total{outcome="error"}' in metrics

    run(scenario())


def test_a_huge_jwks_is_not_read(tmp_path):
    async def scenario() -> None:
        async with serving_provider() as provider:
            provider.padding_bytes = 2 * 1024 * 1024
            settings = provider_settings(provider, oidc_jwks_max_bytes=64 * 1024)
            async with running(tmp_path, **settings) as server:
                status, message = await call(server, provider.token())
                assert status == 401 and "larger than 65536 bytes" in message, message

    run(scenario())


def test_a_provider_down_at_start_leaves_portico_s_own_tokens_working(tmp_path):
    async def scenario() -> None:
        issuer = f"http://127.0.0.1:{free_port()}"
        down = Provider(issuer=issuer, keys=[SigningKey("RS256")])
        settings = provider_settings(down)
        async with running(tmp_path, **settings) as server:
            assert await call(server, await server.login()) == (200, "")
            status, message = await call(server, down.token())
            assert status == 401 and "cannot be fetched now" in message, message
            reply = await server.http.get("/readyz")
            assert reply.status_code == 200
            assert reply.json()["identity_provider"]["status"] == "unreachable"

    run(scenario())


def test_provider_tokens_on_native_grpc_logout_and_the_caller_in_the_logs(tmp_path, caplog):
    caplog.set_level(logging.INFO)

    async def scenario() -> None:
        async with (
            serving_provider() as provider,
            running(tmp_path, **provider_settings(provider), request_log=True) as server,
        ):
            token = provider.token(sub="alice@example")
            version = REGISTRY.method("/cnct.kaas.api.Cluster/GetVersionInformation")
            assert await grpc_call(server.channel, version, token) is grpc.StatusCode.OK
            create = REGISTRY.method("/cnct.kaas.api.Cluster/CreateCluster")
            code = await grpc_call(server.channel, create, token)
            assert code is grpc.StatusCode.PERMISSION_DENIED
            check = await server.http.post("/v1/auth:checkToken", json={"token": token})
            assert check.json() == {"success": True}
            logout = REGISTRY.method("/services.auth.AuthService/Logout")
            assert await grpc_call(server.channel, logout, token) is grpc.StatusCode.OK
            assert await grpc_call(server.channel, version, token) is (
                grpc.StatusCode.UNAUTHENTICATED
            )

    run(scenario())
    lines = [r.getMessage() for r in caplog.records]
    assert any(
        "provider token accepted: subject=alice@example issuer=http://127.0.0.1:" in line
        for line in lines
    ), lines
    assert any("user=alice@example issuer=http://127.0.0.1:" in line for line in lines), lines


def test_tokens_minted_here_have_the_settings_audience():
    # The hostile cases above rely on it: a token is refused for what was changed in it only.
    claims = jwt.decode(
        Provider(issuer="http://127.0.0.1:1", keys=[key := SigningKey("RS256")]).token(),
        key.private.public_key(),
        algorithms=["RS256"],
        audience=AUDIENCE,
    )
    assert claims["aud"] == AUDIENCE


@pytest.mark.parametrize("alg", ["none", "HS256", "HS512"])
def test_the_settings_refuse_algorithms_a_public_key_could_forge(alg):
    from app.settings.config import ConfigurationError, Settings

    with pytest.raises(ConfigurationError, match="PORTICO_OIDC_ALGORITHMS"):
        Settings(oidc_issuer="https://idp.example", oidc_audience="a", oidc_algorithms=(alg,))
