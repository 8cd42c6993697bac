// Adaptive back-off per destination across a cluster (docs/deliverability.md, "Shared by the
// cluster"): two daemons on one PostgreSQL database, one application clock, delivering to one
// loopback MX that answers 421 4.7.0 to every message past R in a window. Mail is sent through
// both; whichever node is answered first lowers the pace, and the other node sends at that pace
// (read from the table, not from a throttle of its own). Every message is delivered, and after the
// first throttle's window the cluster as a whole offers the MX no more than R messages a window.
// `postern queue reset-backoff` run against the database ends the back-off on both daemons.
import t from 'tap';
import { ManualClock } from '../../helpers/clock.js';
import { bootDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { freshPostgres } from '../../helpers/databases.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { startSink } from '../../helpers/smtp-sink.js';
import { until } from '../../helpers/until.js';

const skip = !process.env.POSTERN_TEST_DATABASE_URL && 'needs POSTERN_TEST_DATABASE_URL';
// The MX takes R messages a window; the loop moves the clock STEP at a time.
const R = 20;
const WINDOW = 60_000;
const STEP = 5_000;
const N = 120;
const DOMAIN = 'slow.example';
const NAMES = ['node-a.postern.test', 'node-b.postern.test'];
const FIRST_DECREASE = 'destination throttles: sending to it slower';

t.test('two daemons on one database share a destination’s adaptive back-off', { skip }, async (t) => {
  const pg = await freshPostgres();
  t.teardown(() => pg.drop());
  const clock = new ManualClock();
  let throttling = true;
  const window = () => Math.floor(clock.now().getTime() / WINDOW);
  // Every RCPT the MX was offered: its window, the node (EHLO name) and whether it was refused.
  const offered: { w: number; node: string; refused: boolean }[] = [];
  const sink = await startSink(t, {
    rcpt: (_address, ehlo) => {
      const w = window();
      const refused = throttling && offered.filter((o) => o.w === w && !o.refused).length >= R;
      offered.push({ w, node: ehlo, refused });
      return refused ? { code: 421, message: '4.7.0 Try again later, closing connection.' } : undefined;
    },
  });
  const dns = await startDnsServer({
    'mx.slow.example': [{ type: 'A', data: '127.0.0.1' }],
    [DOMAIN]: [{ type: 'MX', data: { preference: 10, exchange: 'mx.slow.example' } }],
  });
  t.teardown(() => dns.close());
  const env = {
    POSTERN_DNS_SERVERS: dns.address,
    POSTERN_DELIVERY_PORT: String(sink.port),
    POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms',
    POSTERN_DISPATCHER_CONCURRENCY: '8',
  };
  const nodes: TestDaemon[] = [];
  for (const name of NAMES) nodes.push(await bootDaemon(t, { databaseUrl: pg.url, clock, env: { ...env, POSTERN_HOSTNAME: name } }));
  const [a, b] = nodes;
  const ws = await a.workspace('acme', { plan: 'pro' });
  const dispatchers = nodes.map((d) => d.app.workers.find((w) => w.name === 'dispatcher')!);

  let n = 0;
  const send = async (through: TestDaemon, count: number) => {
    const messages = Array.from({ length: count }, () => ({
      to: `user${++n}@${DOMAIN}`,
      channel: 'email',
      content: { subject: 'Hi', text: 'Hello' },
    }));
    const r = await through.request('POST', '/v1/send/batch', { key: ws.live, body: { messages } });
    t.equal(r.status, 202, `${count} messages accepted`);
    return (r.body.data as { id: string }[]).map((m) => m.id);
  };
  const statuses = async (ids: string[]) => {
    const rows = await a.app.db.selectFrom('messages').select(['public_id', 'status']).where('public_id', 'in', ids).execute();
    const count: Record<string, number> = {};
    for (const r of rows) count[r.status] = (count[r.status] ?? 0) + 1;
    return count;
  };
  // What each node goes by (its snapshot, refreshed in the background) against the table.
  const table = async () => {
    const row = await a.app.db.selectFrom('destination_pace').selectAll().where('domain', '=', DOMAIN).executeTakeFirst();
    return row ? { rate: Number(row.rate), connections: Number(row.connections), throttles: Number(row.throttles) } : null;
  };
  const snapshot = (d: TestDaemon) => {
    const s = d.app.destinations.adaptive.state(DOMAIN);
    return s ? { rate: s.rate, connections: s.connections, throttles: s.throttles } : null;
  };
  const paused = async () => {
    const row = await a.app.db.selectFrom('destination_backoff').select('until').where('domain', '=', DOMAIN).executeTakeFirst();
    return row !== undefined && Date.parse(row.until) > clock.now().getTime();
  };
  // A node reads the table every two seconds: before the clock moves on, both go by what it says
  // (the clock's STEP is longer than that refresh, as it would be on the wall clock).
  const inStep = () =>
    until('both nodes to go by the table', async () => {
      const [row, pause] = await Promise.all([table(), paused()]);
      return nodes.every(
        (d) => JSON.stringify(snapshot(d)) === JSON.stringify(row) && (d.app.destinations.gate(ws.id, DOMAIN) !== null) === pause,
      );
    });
  const logged = (d: TestDaemon) => d.logs.some((l) => l.includes(FIRST_DECREASE));

  t.test('a throttle seen by one node paces the other; the cluster stays under the rate', async (t) => {
    const ids = [...(await send(a, N / 2)), ...(await send(b, N / 2))];
    let first: { w: number; by: number; rate: number; loggedBy: boolean[] } | null = null;
    const otherPaced: boolean[] = [];
    let result: Record<string, number> = {};
    for (let step = 0; step < 800; step++) {
      await Promise.all(dispatchers.map((w) => w.tick()));
      result = await statuses(ids);
      if ((result.delivered ?? 0) + (result.failed ?? 0) === N) break;
      await inStep();
      const row = await table();
      if (row && !first) {
        const loggedBy = nodes.map(logged);
        first = { w: window(), by: loggedBy.indexOf(true), rate: row.rate, loggedBy };
      }
      // The node that did not lower the rate goes by the lowered one.
      if (first && first.by >= 0) otherPaced.push(snapshot(nodes[1 - first.by]) !== null);
      clock.advance(STEP);
    }
    t.same(result, { delivered: N }, 'every message delivered, none failed');
    t.ok(first, 'the MX throttled and the destination was slowed');
    if (!first) return;
    t.same(
      first.loggedBy.filter(Boolean).length,
      1,
      `one node lowered the rate at the first throttle, the other did not: ${first.loggedBy.join(', ')}`,
    );
    t.ok(first.rate < R, `to below the MX's ${R} a window: ${first.rate}`);
    t.ok(otherPaced.length > 0 && otherPaced.every(Boolean), 'the other node went by the lowered pace from then on');

    const by = (node: string) => offered.filter((o) => o.node === node && !o.refused).length;
    t.ok(by(NAMES[0]) > 0 && by(NAMES[1]) > 0, `both nodes delivered: ${by(NAMES[0])} and ${by(NAMES[1])}`);
    t.ok(
      NAMES.every((name) => offered.some((o) => o.node === name && o.w > first.w)),
      'both nodes sent to the MX after the first throttle',
    );
    const perWindow = new Map<number, number>();
    for (const o of offered.filter((x) => x.w > first.w)) perWindow.set(o.w, (perWindow.get(o.w) ?? 0) + 1);
    t.ok(perWindow.size >= 2, 'windows after the first throttle');
    t.ok(
      [...perWindow.values()].every((c) => c <= R),
      `after the first throttle the cluster offered at most ${R} a window: ${[...perWindow.values()].join(', ')}`,
    );
    const refusedAfter = offered.filter((o) => o.refused && o.w > first.w).length;
    t.equal(refusedAfter, 0, 'and was not throttled again');

    // Both nodes show the same back-off.
    const shown = await Promise.all(nodes.map(async (d) => (await d.request('GET', `/v1/destinations/${DOMAIN}`, { key: ws.live })).body));
    t.match(shown[0], {
      domain: DOMAIN,
      adaptiveBackoff: { rate: Number, connections: Number, lastAnswer: /421 4\.7\.0 Try again later/ },
    });
    t.same(shown[1].adaptiveBackoff, shown[0].adaptiveBackoff, 'both nodes show the same back-off');
  });

  t.test('postern queue reset-backoff ends it on both daemons', async (t) => {
    t.ok(await table(), 'still backed off');
    const reset = await a.cli('queue', 'reset-backoff', DOMAIN);
    t.equal(reset.code, 0, reset.stderr);
    t.match(reset.json, { domain: DOMAIN, reset: true });
    await until('both nodes to see the reset', () =>
      nodes.every((d) => d.app.destinations.adaptive.state(DOMAIN) === null && d.app.destinations.gate(ws.id, DOMAIN) === null),
    );
    for (const d of nodes) {
      const r = await d.request('GET', `/v1/destinations/${DOMAIN}`, { key: ws.live });
      t.match(r.body, { adaptiveBackoff: null, backoffUntil: null }, `${d === a ? 'node a' : 'node b'} shows full speed`);
    }
    // Full speed on both: a batch through each goes at once, the clock standing still.
    throttling = false;
    const before = offered.length;
    const ids = [...(await send(a, 15)), ...(await send(b, 15))];
    let result: Record<string, number> = {};
    for (let round = 0; round < 20 && (result.delivered ?? 0) < ids.length; round++) {
      await Promise.all(dispatchers.map((w) => w.tick()));
      result = await statuses(ids);
    }
    t.same(result, { delivered: 30 }, 'delivered without waiting for a slot');
    t.equal(offered.length - before, 30, 'each offered once');
  });
});
