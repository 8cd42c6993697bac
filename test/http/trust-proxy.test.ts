// http.trustProxy behind a reverse proxy: the client's address is the one the trusted proxies
// appended to X-Forwarded-For, never what the client wrote at its left. The test plays the proxy
// (it connects from loopback and sends the header a proxy would pass on): a client that forges a
// new left-most address on every try still meets the per-address login throttle, and the audit log
// records its real address.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { OWNER } from '../helpers/dashboard.js';
import { testDatabases } from '../helpers/databases.js';

const CLIENT = '203.0.113.7';
const NEIGHBOUR = '203.0.113.8';

async function login(url: string, forwardedFor: string, email: string) {
  const res = await fetch(`${url}/dashboard/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
    body: JSON.stringify({ email, password: 'not the password at all' }),
  });
  return { status: res.status, body: (await res.json()) as { error?: { message: string } } };
}

const topologies = [
  // One Caddy or nginx on the same machine: it appends the address it saw.
  { name: 'one trusted hop', setting: '1', chain: (spoof: string, client: string) => `${spoof}, ${client}` },
  // nginx in front of an internal balancer on 10.0.0.0/8: both append, both are trusted by range.
  {
    name: 'a CIDR list of proxies',
    setting: '127.0.0.0/8, 10.0.0.0/8',
    chain: (spoof: string, client: string) => `${spoof}, ${client}, 10.1.2.3`,
  },
];

for (const db of testDatabases()) {
  for (const topology of topologies) {
    t.test(`${topology.name} (http.trustProxy ${topology.setting}) on ${db}`, async (t) => {
      const d = await bootDaemon(t, {
        db,
        env: { POSTERN_HTTP_TRUST_PROXY: topology.setting, POSTERN_DASHBOARD_LOGIN_FAILURES_PER_ADDRESS: '3' },
      });
      await d.app.operators.create({ ...OWNER, role: 'owner' });
      // Three failures, each with a new forged left-most address and another account.
      for (let i = 0; i < 3; i++) {
        const r = await login(d.url, topology.chain(`198.51.100.${i}`, CLIENT), `nobody${i}@postern.test`);
        t.equal(r.status, 401, `failure ${i + 1}`);
      }
      const forged = await login(d.url, topology.chain('198.51.100.99', CLIENT), 'someone@postern.test');
      t.equal(forged.status, 429, 'a fourth forged address does not reset the throttle');
      t.match(forged.body.error?.message, /from your address/);
      const neighbour = await login(d.url, topology.chain(CLIENT, NEIGHBOUR), 'another@postern.test');
      t.equal(neighbour.status, 401, 'writing the throttled address at the left does not throttle another client');

      const audit = await d.app.audit.list({ limit: 20 });
      const ips = audit.data.filter((e) => e.action === 'session.login').map((e) => e.ip);
      t.same(ips, [NEIGHBOUR, CLIENT, CLIENT, CLIENT, CLIENT], 'the audit log records the real addresses, newest first');
    });
  }
}
