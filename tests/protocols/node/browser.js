// Logs in and reads the cluster stats as the storage dashboard did, with connect-web over the
// Connect protocol (JSON, then binary); the outcome lands in #result as JSON for the test.
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { AuthService } from "./gen/services/auth/auth_pb.js";
import { StatsService } from "./gen/stats/stats_pb.js";

const params = new URLSearchParams(location.search);
const baseUrl = params.get("base");

async function dashboard(useBinaryFormat) {
  const transport = createConnectTransport({ baseUrl, useBinaryFormat });
  const auth = createClient(AuthService, transport);
  const login = await auth.login({ username: "admin", password: params.get("password") });
  const stats = createClient(StatsService, transport);
  const reply = await stats.getClusterStats(
    {},
    { headers: { Authorization: `Bearer ${login.token}` } },
  );
  return { accountId: login.accountId, clusterId: reply.stats?.id ?? null };
}

const result = document.getElementById("result");
try {
  result.textContent = JSON.stringify({ json: await dashboard(false), binary: await dashboard(true) });
} catch (err) {
  result.textContent = JSON.stringify({ error: String(err) });
}
