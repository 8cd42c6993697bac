// Lease renewals and delivery results on PostgreSQL (outbound/queue.ts renewLeases, the ledger's
// writes in group-commit batches): two nodes delivering a backlog with leases renewed every 1.7 s
// must cause no deadlock. PostgreSQL resolves a deadlock by failing one transaction after
// deadlock_timeout (1 s), so each was a delay and a retried write; pg_stat_database counts them.
import t from 'tap';
import pg from 'pg';
import { startCluster } from '../helpers/cluster.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';

const url = process.env.POSTERN_TEST_DATABASE_URL;
const N = 1500;

async function deadlocks(dbUrl: string): Promise<number> {
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  try {
    const r = await c.query<{ n: number }>('SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()');
    return r.rows[0].n;
  } finally {
    await c.end();
  }
}

t.test('renewals and results on two nodes: no deadlock', { skip: !url && 'needs POSTERN_TEST_DATABASE_URL' }, async (t) => {
  const sink = await startSink(t, { delayMs: 20 });
  const dns = await startDnsServer({
    'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
    'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
  });
  t.teardown(() => dns.close());
  const cluster = await startCluster(t, {
    nodes: 2,
    env: {
      POSTERN_DNS_SERVERS: dns.address,
      POSTERN_DELIVERY_PORT: String(sink.port),
      POSTERN_DISPATCHER_LEASE: '5s',
      POSTERN_RATE_LIMIT_SEND: '0',
    },
  });
  const before = await deadlocks(cluster.url);
  let next = 0;
  const post = async () => {
    for (let i = next++; i < N; i = next++) {
      const r = await cluster.post(cluster.nodes[i % 2], '/v1/send-raw', {
        to: `dl${i}@example.net`,
        channel: 'email',
        content: { subject: `m${i}`, text: 'deadlocks' },
      });
      if (r.status !== 202) throw new Error(`send ${i}: ${r.status}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, post));
  await sink.waitFor(N);
  t.equal((await deadlocks(cluster.url)) - before, 0, `no deadlock while ${N} messages were delivered`);
});
