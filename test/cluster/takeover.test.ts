// A node killed mid-delivery in a cluster of two on one PostgreSQL database (docs/cluster.md,
// "When a node dies"): its heartbeat stops, and within `cluster.nodeTimeout` the other node
// releases the messages it had claimed and delivers them — long before their leases (60 s) would
// have run out. What may arrive twice is bounded by the dead node's open SMTP transactions.
// `postern nodes` lists both nodes, then only the survivor.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { freshPostgres } from '../helpers/databases.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { readBootstrapKeys, runBin } from '../helpers/run-bin.js';
import { startSink } from '../helpers/smtp-sink.js';
import { spawnDaemon, type Spawned } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';

const pg = process.env.POSTERN_TEST_DATABASE_URL;
const N = 300;
const CONNECTIONS = 4;

t.test(
  'a killed node’s messages are taken over within the node timeout, not the lease',
  { skip: !pg && 'needs POSTERN_TEST_DATABASE_URL' },
  async (t) => {
    const db = await freshPostgres();
    t.teardown(() => db.drop());
    const sink = await startSink(t, { delayMs: 150 });
    const dns = await startDnsServer({
      'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
      'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
    });
    t.teardown(() => dns.close());
    const nodes: Spawned[] = [];
    t.teardown(async () => {
      for (const n of nodes) n.child.kill('SIGKILL');
      await Promise.all(nodes.map((n) => n.exited));
    });
    const env = (dataDir: string) => ({
      POSTERN_DATABASE_URL: db.url,
      POSTERN_DATA_DIR: dataDir,
      POSTERN_HTTP_PORT: '0',
      POSTERN_SMTP_PORT: '0',
      POSTERN_SMTP_HOST: '127.0.0.1',
      POSTERN_HOSTNAME: 'mx.postern.test',
      POSTERN_DNS_SERVERS: dns.address,
      POSTERN_DELIVERY_PORT: String(sink.port),
      POSTERN_DELIVERY_MAX_CONNECTIONS_PER_HOST: String(CONNECTIONS),
      POSTERN_CLUSTER_HEARTBEAT: '500ms',
      POSTERN_CLUSTER_NODE_TIMEOUT: '2s',
      POSTERN_RATE_LIMIT_SEND: '0',
      POSTERN_SENDER_CAPS_ENABLED: 'false',
      POSTERN_LOG_LEVEL: 'warn',
    });
    const aDir = mkdtempSync(path.join(tmpdir(), 'postern-node-'));
    const a = await spawnDaemon(env(aDir));
    nodes.push(a);
    const b = await spawnDaemon(env(mkdtempSync(path.join(tmpdir(), 'postern-node-'))));
    nodes.push(b);
    const key = readBootstrapKeys(aDir).live;
    const listed = async () => JSON.parse((await runBin(['nodes'], { env: env(aDir) })).stdout) as { pid: number }[];
    t.same((await listed()).map((n) => n.pid).sort(), [a.child.pid, b.child.pid].sort(), 'postern nodes lists both');

    let next = 0;
    const post = async () => {
      for (let i = next++; i < N; i = next++) {
        const r = await fetch(`http://127.0.0.1:${a.http}/v1/send-raw`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ to: `user${i}@example.net`, channel: 'email', content: { subject: `m${i}`, text: 'hello' } }),
        });
        if (r.status !== 202) throw new Error(`send ${i}: ${r.status}`);
      }
    };
    await Promise.all(Array.from({ length: 16 }, post));
    await sink.waitFor(40);
    b.child.kill('SIGKILL');
    const killedAt = Date.now();
    await b.exited;

    // Every recipient once at least (a duplicate must not stand in for a message still missing).
    const counts = new Map<string, number>();
    const tally = () => {
      counts.clear();
      for (const m of sink.received) for (const to of m.to) counts.set(to, (counts.get(to) ?? 0) + 1);
    };
    await until(
      'every recipient at the receiver',
      () => {
        tally();
        return counts.size >= N;
      },
      90_000,
    );
    const tookOver = Date.now() - killedAt;
    t.equal(counts.size, N, `every message arrived, ${tookOver} ms after the kill (the lease is 60 s)`);
    // Not by waiting out the leases: the survivor found the node dead and released what it held.
    const releases = a.lines
      .filter((l) => l.includes('"a node stopped beating'))
      .map((l) => JSON.parse(l) as { pid: number; released: number })
      .filter((l) => l.pid === b.child.pid);
    t.ok(
      releases.length === 1 && releases[0].released > 0,
      `the survivor released the dead node's ${releases.map((r) => r.released).join(', ')} claims, before their leases ran out`,
    );
    const twice = [...counts].filter(([, c]) => c > 1).length;
    t.ok(twice <= CONNECTIONS, `at most the dead node's open transactions arrived twice (${twice})`);
    t.same(
      (await listed()).map((n) => n.pid),
      [a.child.pid],
      'the dead node is gone from the list',
    );
    a.child.kill('SIGTERM');
    await a.exited;
  },
);
