// Adaptive back-off per destination (docs/deliverability.md, "Adaptive back-off per destination")
// against a real loopback MX that throttles: it answers 421 4.7.0 to every message past R in a
// window of the daemon's clock. Postern lowers the destination's rate and connections, converges
// below R with every message delivered and few throttling answers, shows the state in
// GET /v1/destinations, and climbs back once the MX stops throttling. The state is the cluster's:
// a second node on the same database sees it, and one throttle seen by two nodes lowers it once.
import t from 'tap';
import { createAdaptiveBackoff, FORGET_AFTER_MS } from '../../../src/channels/email/adaptive-backoff.js';
import { createBudgets } from '../../../src/cluster/budgets.js';
import { createLogger } from '../../../src/lib/logger.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { scrape, total } from '../../helpers/metrics.js';
import { startSink } from '../../helpers/smtp-sink.js';
import { until } from '../../helpers/until.js';

// The MX takes R messages a window; the loop moves the clock STEP at a time.
const R = 20;
const WINDOW = 60_000;
const STEP = 5_000;
const DOMAIN = 'slow.example';

for (const db of testDatabases()) {
  t.test(`adaptive back-off against a throttling MX on ${db}`, async (t) => {
    let throttling = true;
    let clockNow = () => 0;
    const windows = new Map<number, number>();
    const throttles: number[] = []; // the clock at each 421
    let overConnections = 0;
    let adaptiveConnections = (): number | undefined => undefined;
    let slowedSince = Infinity;
    const sink = await startSink(t, {
      rcpt: () => {
        const now = clockNow();
        // Past the first window of the back-off, connections open beyond what it allows.
        const allowed = clockNow() >= slowedSince ? (adaptiveConnections() ?? Infinity) : Infinity;
        overConnections = Math.max(overConnections, sink.openNow() - allowed);
        const w = Math.floor(now / WINDOW);
        const n = windows.get(w) ?? 0;
        if (throttling && n >= R) {
          throttles.push(now);
          return { code: 421, message: '4.7.0 Try again later, closing connection.' };
        }
        windows.set(w, n + 1);
        return undefined;
      },
    });
    const dns = await startDnsServer({
      'mx.slow.example': [{ type: 'A', data: '127.0.0.1' }],
      [DOMAIN]: [{ type: 'MX', data: { preference: 10, exchange: 'mx.slow.example' } }],
    });
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, {
      db,
      env: {
        POSTERN_DNS_SERVERS: dns.address,
        POSTERN_DELIVERY_PORT: String(sink.port),
        POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms',
        // The first burst, before the destination has said anything, is the mail in flight.
        POSTERN_DISPATCHER_CONCURRENCY: '8',
      },
    });
    clockNow = () => d.clock.now().getTime();
    adaptiveConnections = () => d.app.destinations.adaptive.state(DOMAIN)?.connections;
    const ws = await d.workspace('acme', { plan: 'pro' });
    const dispatcher = d.app.workers.find((w) => w.name === 'dispatcher')!;
    let n = 0;
    const send = async (count: number) => {
      const messages = Array.from({ length: count }, () => ({
        to: `user${++n}@${DOMAIN}`,
        channel: 'email',
        content: { subject: 'Hi', text: 'Hello' },
      }));
      const r = await d.request('POST', '/v1/send/batch', { key: ws.live, body: { messages } });
      t.equal(r.status, 202, `${count} messages accepted`);
      return (r.body.data as { id: string }[]).map((m) => m.id);
    };
    const statuses = async (ids: string[]) => {
      const rows = await d.app.db.selectFrom('messages').select(['public_id', 'status']).where('public_id', 'in', ids).execute();
      const count: Record<string, number> = {};
      for (const r of rows) count[r.status] = (count[r.status] ?? 0) + 1;
      return count;
    };
    const view = async () => (await d.request('GET', `/v1/destinations/${DOMAIN}`, { key: ws.live })).body;
    // Ticks and moves the clock until every message is delivered or failed (bounded in steps, not time).
    const drain = async (ids: string[], onStep: () => Promise<void> = async () => {}) => {
      for (let step = 0; step < 600; step++) {
        await dispatcher.tick();
        const s = await statuses(ids);
        if ((s.delivered ?? 0) + (s.failed ?? 0) === ids.length) return s;
        await onStep();
        d.clock.advance(STEP);
      }
      return statuses(ids);
    };

    t.test('converges below the rate with no failed message and few throttling answers', async (t) => {
      const ids = await send(100);
      const rates: number[] = [];
      const connections: number[] = [];
      const result = await drain(ids, async () => {
        const state = d.app.destinations.adaptive.state(DOMAIN);
        if (state) {
          if (slowedSince === Infinity) slowedSince = d.clock.now().getTime() + WINDOW;
          rates.push(state.rate);
          connections.push(state.connections);
        }
      });
      t.same(result, { delivered: 100 }, 'every message delivered, none failed');
      t.ok(throttles.length > 0, 'the MX throttled');
      t.ok(throttles.length <= 15, `few throttling answers: ${throttles.length} for 100 messages`);
      t.ok(rates.length > 0 && Math.min(...rates) <= R, `the rate went below the MX's ${R} a minute: ${Math.min(...rates)}`);
      const last = throttles[throttles.length - 1];
      const after = [...windows].filter(([w]) => w * WINDOW > last).map(([, c]) => c);
      t.ok(after.length >= 2, 'windows after the last throttle');
      t.ok(
        after.every((c) => c <= R),
        'converged: after the last throttling answer no window went over the rate',
      );
      t.ok(overConnections <= 0, `connections held to the lowered count (${overConnections} over it at most)`);

      const shown = await view();
      t.match(shown, {
        domain: DOMAIN,
        delivered: 100,
        adaptiveBackoff: {
          rate: Number,
          targetRate: Number,
          connections: Number,
          since: /^\d{4}-/,
          lastAnswer: /421 4\.7\.0 Try again later/,
          lastAnswerAt: /^\d{4}-/,
          throttles: Number,
        },
      });
      t.ok(shown.adaptiveBackoff.rate <= shown.adaptiveBackoff.targetRate, 'below the rate it climbs back to');
      t.equal(connections[0], 2, 'connections per host halved (of 5)');
      const list = (await d.request('GET', '/v1/destinations', { key: ws.live })).body;
      t.match(list.data, [{ domain: DOMAIN, adaptiveBackoff: { rate: shown.adaptiveBackoff.rate } }]);
      // The gauges (cluster wide) say the same.
      const { samples } = await scrape(d.metricsPort!);
      t.equal(total(samples, 'postern_destination_backoff_rate', { domain: DOMAIN, scope: 'cluster' }), shown.adaptiveBackoff.rate);
      t.equal(total(samples, 'postern_destination_backoff_connections', { domain: DOMAIN }), shown.adaptiveBackoff.connections);
    });

    t.test('climbs back when the MX stops throttling', async (t) => {
      throttling = false;
      const before = d.app.destinations.adaptive.state(DOMAIN)!;
      t.ok(before, 'still backed off');
      const seen = throttles.length;
      const ids = await send(60);
      const rates: number[] = [];
      const result = await drain(ids, async () => {
        rates.push(d.app.destinations.adaptive.state(DOMAIN)?.rate ?? Infinity);
      });
      t.same(result, { delivered: 60 });
      t.equal(throttles.length, seen, 'no throttling answer');
      const after = d.app.destinations.adaptive.state(DOMAIN);
      t.ok(after === null || after.rate > before.rate, `the rate climbed: ${before.rate} → ${after?.rate ?? 'full speed'}`);
      t.ok(after === null || after.connections >= before.connections, 'connections did not drop');
      t.ok(
        rates.every((r, i) => i === 0 || r >= rates[i - 1]),
        'step by step, never down',
      );
    });

    t.test('the state is the cluster’s: another node sees it and a throttle it also saw lowers it once', async (t) => {
      const log = createLogger('silent');
      const other = createAdaptiveBackoff({
        db: d.app.db,
        clock: d.clock,
        log,
        budgets: createBudgets({ clock: d.clock, log }),
        settings: { enabled: true, decrease: 0.5, increaseAfter: 20, increaseStep: 0.1 },
        domainRates: {},
        maxConnectionsPerHost: 5,
      });
      const sent = d.clock.now().getTime();
      d.clock.advance(1000);
      // This node notices the throttle first, then the other node an answer to mail sent at the same time.
      await d.app.destinations.adaptive.throttled('shared.example', '421 4.7.0 Try again later', sent);
      await other.load();
      const first = other.state('shared.example');
      t.match(first, { rate: 5, connections: 2, targetRate: 10, throttles: 1 }, 'seen by the other node');
      await other.throttled('shared.example', '421 4.7.0 Try again later', sent);
      t.match(other.state('shared.example'), { rate: 5, throttles: 2 }, 'mail sent before the decrease does not lower the rate again');
      d.clock.advance(1000);
      await other.throttled('shared.example', '451 4.7.650 temporarily rate limited', d.clock.now().getTime());
      t.match(other.state('shared.example'), { rate: 2, connections: 1, throttles: 3 }, 'mail sent after it does');
      t.ok(
        await until('this node to read the other’s change', () => d.app.destinations.adaptive.state('shared.example')?.rate === 2),
        'this node reads it within its refresh',
      );
      const reset = await d.cli('queue', 'reset-backoff', 'shared.example');
      t.equal(reset.code, 0, reset.stderr);
      t.match(reset.json, { domain: 'shared.example', reset: true });
      t.ok(
        await until('this node to see the reset', () => d.app.destinations.adaptive.state('shared.example') === null),
        'the operator’s reset ends it on every node',
      );

      // Climbing: a tenth of the rate the decrease set (at least 1) and a connection per 20 deliveries
      // in a row, until the rate it climbs back to with every connection: full speed.
      await other.throttled('climb.example', '421 4.7.0 Try again later', d.clock.now().getTime());
      const climbed: { rate: number; connections: number }[] = [];
      for (let i = 1; i <= 100; i++) {
        await other.accepted('climb.example');
        if (i % 20 === 0) {
          const s = other.state('climb.example');
          climbed.push(s ? { rate: s.rate, connections: s.connections } : { rate: Infinity, connections: Infinity });
        }
      }
      t.same(
        climbed,
        [
          { rate: 6, connections: 3 },
          { rate: 7, connections: 4 },
          { rate: 8, connections: 5 },
          { rate: 9, connections: 5 },
          { rate: Infinity, connections: Infinity },
        ],
        'one step per 20 deliveries, then full speed (the back-off over)',
      );

      // A day without a throttle ends a back-off however far it climbed.
      await other.throttled('quiet.example', '421 4.7.0 Try again later', d.clock.now().getTime());
      await other.load();
      t.ok(other.state('quiet.example'), 'backed off');
      d.clock.advance(FORGET_AFTER_MS + 1000);
      await other.load();
      t.equal(other.state('quiet.example'), null, 'forgotten a day after its last throttle');
      t.equal(
        await d.app.db.selectFrom('destination_pace').select('domain').where('domain', '=', 'quiet.example').executeTakeFirst(),
        undefined,
      );
    });

    t.test('the operator’s reset releases the mail the back-off deferred', async (t) => {
      throttling = false;
      await d.app.destinations.adaptive.throttled(DOMAIN, '421 4.7.0 Try again later', d.clock.now().getTime());
      t.ok(d.app.destinations.adaptive.state(DOMAIN), 'backed off');
      const ids = await send(12);
      const now = () => d.clock.now().toISOString();
      const waiting = () =>
        d.app.db
          .selectFrom('messages')
          .select(['public_id', 'due_at'])
          .where('public_id', 'in', ids)
          .where('status', '=', 'dispatched')
          .where('due_at', '>', now())
          .execute();
      // The clock stands still: what the lowered rate lets through goes, the rest waits for its slot.
      const deferred = await until('some of the mail to wait for a slot', async () => {
        await dispatcher.tick();
        const rows = await waiting();
        return rows.length > 0 && rows;
      });
      const reset = await d.cli('queue', 'reset-backoff', DOMAIN);
      t.equal(reset.code, 0, reset.stderr);
      t.match(reset.json, { domain: DOMAIN, reset: true });
      t.ok((reset.json as { released: number }).released >= deferred.length, `released ${(reset.json as { released: number }).released}`);
      // The command ran on the machine's clock (the daemon's is the test's): due by then.
      const ranAt = new Date().toISOString();
      const stillWaiting = await d.app.db
        .selectFrom('messages')
        .select(['public_id', 'due_at'])
        .where(
          'public_id',
          'in',
          deferred.map((r) => r.public_id),
        )
        .where('due_at', '>', ranAt)
        .execute();
      t.same(stillWaiting, [], 'none still waits for a slot of the ended back-off');
    });
  });
}
