// A receiver slower than the dispatcher's lease (docs/cluster.md, "Leases"): the lease of a message
// being delivered is renewed while the delivery lasts, so neither another node nor the same one
// takes it again and sends it twice. Before the heartbeat, a delivery outliving its lease was
// claimed and sent again (45 of 400 with a short lease). On PostgreSQL two nodes share the queue.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { openDatabase } from '../../src/db/database.js';
import { freshPostgres, testDatabases } from '../helpers/databases.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { readBootstrapKeys } from '../helpers/run-bin.js';
import { startSink } from '../helpers/smtp-sink.js';
import { spawnDaemon, type Spawned } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';

const N = 6;

for (const db of testDatabases()) {
  t.test(`a receiver slower than the lease gets each message once on ${db}`, async (t) => {
    // 5 s is the shortest lease there is; the receiver takes 6 s to answer each message.
    const sink = await startSink(t, { delayMs: 6_000 });
    const dns = await startDnsServer({
      'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
      'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
    });
    t.teardown(() => dns.close());
    const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-node-'));
    let databaseUrl = '';
    if (db === 'postgres') {
      const fresh = await freshPostgres();
      t.teardown(() => fresh.drop());
      databaseUrl = fresh.url;
    }
    const nodes: Spawned[] = [];
    t.teardown(async () => {
      for (const n of nodes) n.child.kill('SIGKILL');
      await Promise.all(nodes.map((n) => n.exited));
    });
    const node = async (dir: string) => {
      const n = await spawnDaemon({
        POSTERN_DATABASE_URL: databaseUrl,
        POSTERN_DATA_DIR: dir,
        POSTERN_HTTP_PORT: '0',
        POSTERN_SMTP_PORT: '0',
        POSTERN_SMTP_HOST: '127.0.0.1',
        POSTERN_HOSTNAME: 'mx.postern.test',
        POSTERN_DNS_SERVERS: dns.address,
        POSTERN_DELIVERY_PORT: String(sink.port),
        POSTERN_DELIVERY_MAX_CONNECTIONS_PER_HOST: '3',
        POSTERN_DISPATCHER_LEASE: '5s',
        POSTERN_DISPATCHER_INTERVAL: '200ms',
        POSTERN_RATE_LIMIT_SEND: '0',
        POSTERN_SENDER_CAPS_ENABLED: 'false',
        POSTERN_LOG_LEVEL: 'warn',
      });
      nodes.push(n);
      return n;
    };
    const a = await node(dataDir);
    // SQLite is one node's file; on PostgreSQL a second node competes for the same queue.
    if (db === 'postgres') await node(mkdtempSync(path.join(tmpdir(), 'postern-node-')));
    const key = readBootstrapKeys(dataDir).live;
    const ids: string[] = [];
    for (let i = 0; i < N; i++) {
      const r = await fetch(`http://127.0.0.1:${a.http}/v1/send-raw`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: `user${i}@example.net`, channel: 'email', content: { subject: `m${i}`, text: 'hello' } }),
      });
      t.equal(r.status, 202);
      ids.push(((await r.json()) as { id: string }).id);
    }
    // Each hand-over to the receiver is counted (attempts) and committed before it is made, and a
    // delivered message is never claimed again: once every message is delivered, the attempts say
    // how many arrivals there will ever be. A lease lost mid-delivery shows as a second attempt,
    // which is then waited for at the receiver. Leases retaken over and over never settle: that
    // fails, and the counts below say what arrived.
    const handle = openDatabase(
      db === 'postgres' ? { dialect: 'postgres', url: databaseUrl } : { dialect: 'sqlite', file: path.join(dataDir, 'postern.sqlite') },
    );
    t.teardown(() => handle.close());
    const rows = await until(
      `the ${N} messages delivered`,
      async () => {
        const rows = await handle.db.selectFrom('messages').select(['status', 'attempts']).where('public_id', 'in', ids).execute();
        return rows.length === N && rows.every((r) => r.status === 'delivered') && rows;
      },
      90_000,
    ).catch((err: Error) => void t.fail(err.message));
    if (rows) {
      const handOvers = rows.reduce((n, r) => n + Number(r.attempts), 0);
      await until(`the ${handOvers} hand-overs at the receiver`, () => sink.received.length >= handOvers, 90_000);
    }
    const counts = new Map<string, number>();
    for (const m of sink.received) for (const to of m.to) counts.set(to, (counts.get(to) ?? 0) + 1);
    t.equal(counts.size, N, 'every message arrived');
    t.same(
      [...counts].filter(([, c]) => c > 1),
      [],
      'none twice',
    );
    for (const n of nodes) n.child.kill('SIGTERM');
    await Promise.all(nodes.map((n) => n.exited));
  });
}
