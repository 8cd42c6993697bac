// Limits that hold for the cluster, not per node (docs/cluster.md, "Limits in a cluster"). Before,
// two nodes let a key through twice its rate limit, and an endpoint limited to 4 attempts at once
// received 5–7 because each node counted the others' leases before either took its own.
import t from 'tap';
import { openDatabase } from '../../src/db/database.js';
import { recordEvent } from '../../src/events/record.js';
import { systemClock } from '../../src/lib/clock.js';
import { createIds } from '../../src/lib/ids.js';
import { startCluster } from '../helpers/cluster.js';
import { testRedisUrl } from '../helpers/databases.js';
import { startRemoteMx } from '../helpers/smtp-sink.js';
import { until } from '../helpers/until.js';
import { startReceiver } from '../helpers/webhook-receiver.js';

const pg = process.env.POSTERN_TEST_DATABASE_URL;

/** How many live nodes a node last said there are (its log, cluster/nodes.ts), or null. */
function liveNodesSaid(lines: string[]): number | null {
  let live: number | null = null;
  for (const l of lines) {
    if (!l.includes('"the live nodes changed')) continue;
    live = (JSON.parse(l) as { live: number }).live;
  }
  return live;
}
const skip = !pg && 'needs POSTERN_TEST_DATABASE_URL';

for (const store of ['postgres', 'redis'] as const) {
  t.test(`a key's rate limit holds across two nodes (budgets in ${store})`, { skip }, async (t) => {
    const c = await startCluster(t, {
      nodes: 2,
      env: { POSTERN_RATE_LIMIT_SEND: '10', ...(store === 'redis' ? { POSTERN_REDIS_URL: testRedisUrl() } : {}) },
    });
    // 40 sends at once, half through each node: 10 pass in all (and what refilled meanwhile, at
    // 10 per second; the Redis store counts a one-second window), not 10 per node.
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        c.post(
          c.nodes[i % 2],
          '/v1/send-raw',
          { to: `u${i}@example.net`, channel: 'email', content: { subject: 's', text: 'x' } },
          c.keys.test,
        ),
      ),
    );
    const statuses = answers.map((r) => r.status);
    const refill = Math.ceil(((Date.now() - started) / 1000) * 10);
    const accepted = statuses.filter((s) => s === 202).length;
    t.ok(accepted >= 10 && accepted <= 10 + refill, `${accepted} accepted across the cluster (10, plus ${refill} refilled)`);
    t.equal(statuses.filter((s) => s === 429).length, 40 - accepted, 'the rest refused');
    const refused = answers.find((r) => r.status === 429)!;
    t.ok(Number(refused.headers.get('retry-after')) >= 1, 'Retry-After names when to come back');
    const body = (await refused.json()) as { error: { code: string; limit: number } };
    t.equal(body.error.code, 'rate_limited');
    t.equal(body.error.limit, 10, 'the 429 names the cluster-wide limit');
    for (const r of answers) if (r !== refused) await r.body?.cancel();
  });
}

t.test('an endpoint’s concurrency cap holds across two nodes', { skip }, async (t) => {
  const CAP = 4;
  const EVENTS = 60;
  let open = 0;
  let most = 0;
  // A slow endpoint: each attempt stays open 100 ms, so attempts overlap and the cap is reached.
  const rx = await startReceiver(async () => {
    open++;
    most = Math.max(most, open);
    await new Promise((r) => setTimeout(r, 100));
    open--;
    return 200;
  });
  t.teardown(() => rx.close());
  const c = await startCluster(t, {
    nodes: 2,
    env: {
      POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true',
      POSTERN_WEBHOOKS_POLL_INTERVAL: '20ms',
      POSTERN_WEBHOOKS_CONCURRENCY_PER_ENDPOINT: String(CAP),
    },
  });
  t.equal((await c.post(c.nodes[0], '/v1/webhooks', { url: rx.url })).status, 201);

  // Events written by a third process, as the CLI or another node would: both nodes see them.
  const handle = openDatabase({ dialect: 'postgres', url: c.url });
  const ws = await handle.db.selectFrom('workspaces').select('id').executeTakeFirstOrThrow();
  for (let i = 0; i < EVENTS; i++)
    await recordEvent(
      handle.db,
      { clock: systemClock, ids: createIds() },
      { workspaceId: ws.id, livemode: true, type: 'message.sent', data: { n: i } },
    );
  await handle.close();

  await rx.until(() => rx.processed.size === EVENTS, 'every event delivered', 60_000);
  t.equal(rx.processed.size, EVENTS, 'every event arrived');
  t.ok(most <= CAP, `at most ${CAP} attempts at once (saw ${most})`);
  t.ok(most >= 2, `the cap was used (saw ${most} at once)`);
});

t.test('connections per destination host hold across two nodes', { skip }, async (t) => {
  const CAP = 3;
  const N = 60;
  const { sink, dns } = await startRemoteMx(t, { delayMs: 100 });
  const c = await startCluster(t, {
    nodes: 2,
    env: {
      POSTERN_DNS_SERVERS: dns.address,
      POSTERN_DELIVERY_PORT: String(sink.port),
      POSTERN_DELIVERY_MAX_CONNECTIONS_PER_HOST: String(CAP),
      POSTERN_CLUSTER_HEARTBEAT: '500ms',
      POSTERN_RATE_LIMIT_SEND: '0',
      POSTERN_LOG_LEVEL: 'info',
    },
  });
  // Each node knows of the other by its next beat; each says so once its share is split.
  await until('each node to count two live nodes', () => c.nodes.every((n) => liveNodesSaid(n.lines) === 2));
  for (let i = 0; i < N; i++) {
    const r = await c.post(c.nodes[i % 2], '/v1/send-raw', {
      to: `u${i}@example.net`,
      channel: 'email',
      content: { subject: 's', text: 'x' },
    });
    t.equal(r.status, 202);
  }
  await until(`the ${N} messages at the receiver`, () => sink.received.length >= N);
  t.equal(sink.received.length, N, 'every message arrived');
  t.ok(sink.mostOpen() <= CAP, `at most ${CAP} connections at once (saw ${sink.mostOpen()})`);
  t.ok(sink.mostOpen() >= 2, `both nodes delivered at once (saw ${sink.mostOpen()})`);
});
