"""An identity provider made in the test: signing keys, tokens minted with them, and a loopback
HTTP server publishing the discovery document and the JWKS (which a test may rotate, slow down
or blow up)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from tests.harness import uvicorn_serving

AUDIENCE = "portico-api"


@dataclass
class SigningKey:
    """One private key of the provider, with its key id and algorithm."""

    algorithm: str
    kid: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    private: Any = None

    def __post_init__(self) -> None:
        if self.private is None:
            if self.algorithm.startswith(("RS", "PS")):
                self.private = rsa.generate_private_key(65537, 2048)
            elif self.algorithm == "ES256":
                self.private = ec.generate_private_key(ec.SECP256R1())
            elif self.algorithm == "ES384":
                self.private = ec.generate_private_key(ec.SECP384R1())
            else:
                self.private = ed25519.Ed25519PrivateKey.generate()

    def public_jwk(self) -> dict[str, Any]:
        public = self.private.public_key()
        if self.algorithm.startswith(("RS", "PS")):
            found = RSAAlgorithm.to_jwk(public, as_dict=True)
        elif self.algorithm.startswith("ES"):
            found = ECAlgorithm.to_jwk(public, as_dict=True)
        else:
            found = OKPAlgorithm.to_jwk(public, as_dict=True)
        return {**found, "kid": self.kid, "use": "sig", "alg": self.algorithm}


@dataclass
class Provider:
    """The provider's state: its keys published, and how its server behaves."""

    issuer: str = ""
    keys: list[SigningKey] = field(default_factory=list)
    delay_seconds: float = 0.0  # before the JWKS answers
    padding_bytes: int = 0  # a JWKS this much larger
    jwks_fetches: int = 0

    def jwks(self) -> dict[str, Any]:
        return {"keys": [key.public_jwk() for key in self.keys]}

    def claims(self, **changes: Any) -> dict[str, Any]:
        now = int(time.time())
        found = {
            "iss": self.issuer,
            "aud": AUDIENCE,
            "sub": "user-42",
            "iat": now,
            "nbf": now,
            "exp": now + 600,
            "roles": ["viewer"],
        }
        found.update(changes)
        return {k: v for k, v in found.items() if v is not None}

    def token(self, key: SigningKey | None = None, headers: Any = None, **claims: Any) -> str:
        """A token signed with ``key`` (the first published one), the claims given changed."""
        key = key or self.keys[0]
        return jwt.encode(
            self.claims(**claims),
            key.private,
            algorithm=key.algorithm,
            headers={"kid": key.kid, **(headers or {})},
        )


def _provider_app(provider: Provider) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        path = scope["path"]
        if path == "/.well-known/openid-configuration":
            body = {"issuer": provider.issuer, "jwks_uri": provider.issuer + "/jwks"}
        elif path == "/jwks":
            provider.jwks_fetches += 1
            if provider.delay_seconds:
                await asyncio.sleep(provider.delay_seconds)
            body = provider.jwks()
            if provider.padding_bytes:
                body["padding"] = "x" * provider.padding_bytes
        else:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        data = json.dumps(body).encode()
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    return app


@contextlib.asynccontextmanager
async def serving_provider(*algorithms: str) -> AsyncIterator[Provider]:
    """A provider on a loopback port with one key of each algorithm (RS256 when none given)."""
    provider = Provider(keys=[SigningKey(a) for a in algorithms or ("RS256",)])
    async with uvicorn_serving(_provider_app(provider)) as address:
        provider.issuer = f"http://{address}"
        yield provider


def provider_settings(provider: Provider, **changes: Any) -> dict[str, Any]:
    """The settings of a Portico that admits ``provider``'s tokens."""
    return {
        "oidc_issuer": provider.issuer,
        "oidc_audience": AUDIENCE,
        "oidc_jwks_refresh_seconds": 1.0,
        **changes,
    }
