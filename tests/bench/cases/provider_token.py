"""(a) with an identity provider's token beside (a) with Portico's own, on the same server and
in turns (:meth:`Bench.compare`): the server admits the tokens of a provider on loopback (a
stdlib HTTP server publishing one RS256 key, started here), and each row sends one token. After
its first call a provider token is served from the gate's cache as Portico's are, so the rows
should be within the machine's drift (the issue's target: at least 0.9x)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.bench.cases import WARM_OBJECTS, Bench, Case, Target
from tests.bench.cases.version import PATH
from tests.bench.procs import free_port, wait_ready
from tests.bench.servers import portico

AUDIENCE = "portico-bench"
KID = "bench"
ROWS = (
    ("a_version_own_token", "(a) with Portico's own token"),
    ("a_version_provider_token", "(a) with an identity provider's token (RS256, OIDC)"),
)
# The provider: its JWKS (and discovery document) from argv, on the port given.
_PROVIDER = """
import http.server, sys
issuer, jwks = sys.argv[1], sys.argv[2].encode()
discovery = ('{"issuer": "%s", "jwks_uri": "%s/jwks"}' % (issuer, issuer)).encode()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = {"/jwks": jwks, "/.well-known/openid-configuration": discovery}.get(self.path)
        self.send_response(200 if body else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[3])), Handler).serve_forever()
"""


def provider_token(bench: Bench) -> dict[str, Any]:
    key = rsa.generate_private_key(65537, 2048)
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    jwks = {"keys": [{**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": KID}]}
    bench.processes.start([sys.executable, "-c", _PROVIDER, issuer, json.dumps(jwks), str(port)])
    wait_ready(f"{issuer}/jwks")
    now = int(time.time())
    claims = {"iss": issuer, "aud": AUDIENCE, "sub": "bench", "iat": now, "exp": now + 86_400}
    token = jwt.encode({**claims, "roles": ["admin"]}, key, algorithm="RS256", headers={"kid": KID})
    env = {"PORTICO_OIDC_ISSUER": issuer, "PORTICO_OIDC_AUDIENCE": AUDIENCE}
    with portico(bench.processes, bench.workers, seed=WARM_OBJECTS, env=env) as server:
        return bench.compare(
            {
                "a_version_own_token": Target(server.http, PATH, server.token),
                "a_version_provider_token": Target(server.http, PATH, token),
            },
            seconds=bench.seconds,
        )


CASES = [
    Case(
        "provider_token",
        "(a) with a provider's token and with Portico's own",
        "main",
        provider_token,
        rows=ROWS,
    )
]
