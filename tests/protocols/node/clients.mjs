// Calls a running Portico with connect-es clients over Connect JSON, Connect binary and gRPC-Web
// (HTTP/1.1), and native gRPC (HTTP/2) where the server serves it on the same port.
// Usage: node clients.mjs BASE_URL PASSWORD [TRANSPORT,...] — prints one JSON report.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { AuthService } from "./gen/services/auth/auth_pb.js";
import { StatsService } from "./gen/stats/stats_pb.js";
import { FlavorApi } from "./gen/edgeproto/flavor_pb.js";

const [baseUrl, password, chosen] = process.argv.slice(2);

const all = {
  connectJson: () => createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false }),
  connectBinary: () => createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
  grpcWeb: () => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
  grpc: () => createGrpcTransport({ baseUrl, httpVersion: "2" }),
};
const names = chosen ? chosen.split(",") : ["connectJson", "connectBinary", "grpcWeb"];
const transports = Object.fromEntries(names.map((name) => [name, all[name]()]));

async function exercise(name, transport) {
  const auth = createClient(AuthService, transport);
  const login = await auth.login({ username: "admin", password });
  const headers = { Authorization: `Bearer ${login.token}` };
  const stats = createClient(StatsService, transport);
  const reply = await stats.getClusterStats({}, { headers });
  const flavors = createClient(FlavorApi, transport);
  const flavorName = `flavor-${name.toLowerCase()}`;
  await flavors.createFlavor({ key: { name: flavorName }, ram: 1024n, vcpus: 2n, disk: 10n }, { headers });
  const shown = [];
  for await (const flavor of flavors.showFlavor({}, { headers })) {
    shown.push(flavor.key?.name);
  }
  let refusal = null;
  try {
    await stats.getClusterStats({});
  } catch (err) {
    const error = ConnectError.from(err);
    refusal = { code: Code[error.code], message: error.rawMessage };
  }
  let wrongPassword = null;
  try {
    await auth.login({ username: "admin", password: "not-the-password" });
  } catch (err) {
    wrongPassword = Code[ConnectError.from(err).code];
  }
  return {
    accountId: login.accountId,
    expires: login.expires !== undefined,
    clusterId: reply.stats?.id ?? null,
    stats: reply.stats !== undefined,
    flavors: shown,
    refusal,
    wrongPassword,
  };
}

const report = {};
for (const [name, transport] of Object.entries(transports)) {
  report[name] = await exercise(name, transport);
}
console.log(JSON.stringify(report));
