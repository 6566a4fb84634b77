// A real OpenID provider (the OpenID Certified `oidc-provider` package) on a loopback port, for
// the tests of provider tokens: two confidential clients that get JWT access tokens for Portico's
// audience by client credentials, one signed RS256, the other ES256, with keys made at start.
//
//   node oidc_provider.mjs AUDIENCE
//
// Prints one JSON line {"issuer", "resource", "clients": {id: {secret, alg}}} once it listens,
// and stops when its standard input closes (the test's end, or the test process dying).
import crypto from "node:crypto";
import http from "node:http";
import Provider from "oidc-provider";

const audience = process.argv[2] || "portico-api";
const resource = "urn:portico:api";
const roles = ["viewer"];
const clients = {
  "portico-rs256": { secret: crypto.randomBytes(24).toString("hex"), alg: "RS256" },
  "portico-es256": { secret: crypto.randomBytes(24).toString("hex"), alg: "ES256" },
};

function privateJwk(type, options, alg) {
  const { privateKey } = crypto.generateKeyPairSync(type, options);
  const jwk = privateKey.export({ format: "jwk" });
  return { ...jwk, alg, use: "sig", kid: `${alg.toLowerCase()}-${crypto.randomUUID().slice(0, 8)}` };
}

const keys = [
  privateJwk("rsa", { modulusLength: 2048 }, "RS256"),
  privateJwk("ec", { namedCurve: "P-256" }, "ES256"),
];

// The issuer names the port, so the server listens before the provider exists.
let handler = (_req, res) => res.writeHead(503).end();
const server = http.createServer((req, res) => handler(req, res));
server.listen(0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    jwks: { keys },
    clients: Object.entries(clients).map(([id, { secret }]) => ({
      client_id: id,
      client_secret: secret,
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: "client_secret_basic",
    })),
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        getResourceServerInfo: (_ctx, indicator, client) => {
          if (indicator !== resource) throw new Error(`unknown resource ${indicator}`);
          return {
            scope: "api",
            audience,
            accessTokenTTL: 300,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg: clients[client.clientId].alg } },
          };
        },
      },
    },
    // Portico reads the caller's roles from the `roles` claim (PORTICO_OIDC_ROLES_CLAIM).
    extraTokenClaims: () => ({ roles }),
  });
  handler = provider.callback();
  process.stdout.write(`${JSON.stringify({ issuer, resource, clients })}\n`);
});

process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
