// A node told to stop (SIGTERM) in a cluster of two on one PostgreSQL database (docs/cluster.md,
// "Stopping a node"): it stops claiming at once, gives back what it claimed but never handed over,
// lets its deliveries in flight finish within `shutdown.drainSeconds`, and exits, while the other
// node delivers the rest. It once kept claiming until the whole cluster's backlog was empty, so a
// graceful stop turned into systemd's or Docker's SIGKILL. Nothing is delivered twice.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { freshPostgres } from '../helpers/databases.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { readBootstrapKeys } from '../helpers/run-bin.js';
import { startSink } from '../helpers/smtp-sink.js';
import { spawnDaemon, type Spawned } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';

const pg = process.env.POSTERN_TEST_DATABASE_URL;
const N = 800;

t.test(
  'a node stopped with SIGTERM stops claiming, drains within the drain time, and nothing is sent twice',
  { skip: !pg && 'needs POSTERN_TEST_DATABASE_URL' },
  async (t) => {
    const db = await freshPostgres();
    t.teardown(() => db.drop());
    // A slow receiver: 40 ms before each 250, so the backlog outlives the stop by seconds. It holds
    // every answer until all the sends are in: on a loaded machine the sends are slower than the
    // deliveries, which would otherwise leave no backlog to give back by the time of the stop.
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    const sink = await startSink(t, { delayMs: 40, hold });
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
    const node = async () => {
      const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-node-'));
      const n = await spawnDaemon({
        POSTERN_DATABASE_URL: db.url,
        POSTERN_DATA_DIR: dataDir,
        POSTERN_HTTP_PORT: '0',
        POSTERN_SMTP_PORT: '0',
        POSTERN_SMTP_HOST: '127.0.0.1',
        POSTERN_HOSTNAME: 'mx.postern.test',
        POSTERN_DNS_SERVERS: dns.address,
        POSTERN_DELIVERY_PORT: String(sink.port),
        POSTERN_DELIVERY_MAX_CONNECTIONS_PER_HOST: '4',
        POSTERN_RATE_LIMIT_SEND: '0',
        POSTERN_SENDER_CAPS_ENABLED: 'false',
        POSTERN_SHUTDOWN_DRAIN_SECONDS: '5',
        POSTERN_LOG_LEVEL: 'warn',
      });
      nodes.push(n);
      return { n, dataDir };
    };
    const a = await node();
    const b = await node();
    const key = readBootstrapKeys(a.dataDir).live;

    let next = 0;
    const post = async () => {
      for (let i = next++; i < N; i = next++) {
        const r = await fetch(`http://127.0.0.1:${a.n.http}/v1/send-raw`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ to: `user${i}@example.net`, channel: 'email', content: { subject: `m${i}`, text: 'hello' } }),
        });
        if (r.status !== 202) throw new Error(`send ${i}: ${r.status} ${await r.text()}`);
      }
    };
    await Promise.all(Array.from({ length: 16 }, post));
    release();
    await sink.waitFor(100);

    const stoppedAt = Date.now();
    b.n.child.kill('SIGTERM');
    const code = await b.n.exited;
    const took = Date.now() - stoppedAt;
    const atExit = sink.received.length;
    t.equal(code, 0, 'the stopped node exits cleanly');
    // A bound only a drain that ignores its time reaches (a loaded machine may take seconds more to
    // close its pools); that it gave the backlog back is the line after.
    t.ok(took < 5_000 + 25_000, `it stopped after the drain time, not the backlog (${took} ms)`);
    t.ok(atExit < N - 100, `it did not work through the cluster's backlog first (${atExit} of ${N} delivered when it exited)`);

    // The other node delivers the rest, what the stopped node gave back included.
    const counts = new Map<string, number>();
    await until(`the ${N} recipients at the receiver`, () => {
      counts.clear();
      for (const m of sink.received) for (const to of m.to) counts.set(to, (counts.get(to) ?? 0) + 1);
      return counts.size >= N;
    });
    t.equal(counts.size, N, 'every message arrived');
    t.same(
      [...counts].filter(([, c]) => c > 1),
      [],
      'none twice',
    );
  },
);
