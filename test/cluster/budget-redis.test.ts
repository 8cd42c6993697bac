// The budgets' Redis store (cluster/budgets.ts) against the real Redis of the test machine
// (POSTERN_TEST_REDIS_URL, docs/testing.md): fixed windows of the period counted in Redis, shared by
// every client, each key and each budget name its own; a rate of 0 refuses every take; and while
// Redis cannot be reached (a proxy in front of it cut by the test) each client keeps the budget in
// process, logged once per outage, instead of refusing everything or letting everything through.
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import t from 'tap';
import { createBudgets } from '../../src/cluster/budgets.js';
import { ManualClock } from '../helpers/clock.js';
import { testRedisUrl } from '../helpers/databases.js';
import { logLines } from '../helpers/log-lines.js';
import { until } from '../helpers/until.js';

const clock = new ManualClock('2026-01-01T00:00:00Z');

t.test('a budget in Redis: one window per key and name, shared by every client', async (t) => {
  const { log } = logLines('warn');
  const a = createBudgets({ redisUrl: testRedisUrl(), clock, log });
  const b = createBudgets({ redisUrl: testRedisUrl(), clock, log });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  await Promise.all([a.ready(), b.ready()]);
  t.equal(a.scope, 'cluster');
  t.equal(a.store, 'redis');
  // A name of this run's own: the window lives in Redis for its period.
  const name = `test-${randomBytes(6).toString('hex')}`;
  const rate = { count: 2, perMs: 60_000 };
  const onA = a.budget(name, rate);
  const onB = b.budget(name, rate);
  t.equal(await onA.take('gmail.com'), 0, 'the first of two');
  t.equal(await onB.take('gmail.com'), 0, 'the second, through the other client');
  const wait = await onA.take('gmail.com');
  // The window is the rate's minute, begun at the first take a moment ago.
  t.ok(wait > 30_000 && wait <= 60_000, `the third waits for the window's end (${wait} ms)`);
  t.ok((await onB.take('gmail.com')) >= 1, 'through either client');
  t.equal(await onA.take('yahoo.com'), 0, 'another key has its own window');
  t.equal(await a.budget(`${name}-other`, rate).take('gmail.com'), 0, 'another name too');

  // A rate of nothing refuses every take, without asking Redis.
  const none = a.budget(name, { count: 0, perMs: 1000 });
  t.equal(await none.take('gmail.com'), 1000);
  t.equal(await none.take('yahoo.com'), 1000);
});

/**
 * A TCP proxy in front of the real Redis that the test can cut (every connection dropped as it
 * comes), counting the connections the client makes.
 */
async function cuttableRedis(t: { teardown(fn: () => unknown): void }) {
  const target = new URL(testRedisUrl());
  const sockets = new Set<net.Socket>();
  let cut = false; // once cut, for good: every later connection is dropped as it comes
  let connections = 0;
  const server = net.createServer((client) => {
    connections++;
    if (cut) return client.destroy();
    const upstream = net.connect(Number(target.port || 6379), target.hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return {
    url: `redis://127.0.0.1:${(server.address() as net.AddressInfo).port}${target.pathname}`,
    connections: () => connections,
    cut() {
      cut = true;
      for (const s of sockets) s.destroy();
    },
  };
}

t.test('while Redis cannot be reached, the budget is kept in process; the outage is logged once', async (t) => {
  const redis = await cuttableRedis(t);
  const { lines, log } = logLines('warn');
  const outages = () => lines.filter((l) => l.includes('Redis is unreachable; budgets are kept per node until it is back')).length;
  const budgets = createBudgets({ redisUrl: redis.url, clock, log });
  t.teardown(() => budgets.close());
  await budgets.ready();
  t.equal(outages(), 0, 'connected: nothing to say');
  const name = `test-${randomBytes(6).toString('hex')}`;
  const rate = { count: 2, perMs: 60_000 };
  const budget = budgets.budget(name, rate);
  t.equal(await budget.take('key1'), 0);

  redis.cut();
  await until('the outage noticed', () => outages() > 0);
  // The client keeps trying to reconnect; every failed try is an error, and none is a new outage.
  const tried = redis.connections();
  await until('two more tries to reconnect', () => redis.connections() >= tried + 2);
  t.equal(outages(), 1, 'one line for the outage, not one per failed try');
  const local = budgets.budget(`${name}-local`, rate);
  t.equal(await local.take('key1'), 0);
  t.equal(await local.take('key1'), 0);
  t.ok((await local.take('key1')) > 0, 'the third is refused in process: the budget still holds');
  t.equal(await local.take('key2'), 0, 'another key is not held up');
});

t.test('a Redis that cannot be reached at the start: the start goes on, the budget is kept in process', async (t) => {
  // A port that drops every connection as it comes.
  const server = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { lines, log } = logLines('warn');
  const budgets = createBudgets({ redisUrl: `redis://127.0.0.1:${(server.address() as net.AddressInfo).port}`, clock, log });
  t.teardown(() => budgets.close());
  await budgets.ready();
  t.equal(lines.filter((l) => l.includes('Redis is unreachable')).length, 1, 'ready once it failed, and said so');
  const budget = budgets.budget('api-send', { count: 1, perMs: 60_000 });
  t.equal(await budget.take('key1'), 0);
  t.ok((await budget.take('key1')) > 0, 'the budget holds in process');
});
