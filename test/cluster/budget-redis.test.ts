// The budgets' Redis store (cluster/budgets.ts) against the real Redis of the test machine
// (POSTERN_TEST_REDIS_URL, docs/testing.md): fixed windows of the period counted in Redis, shared by
// every client, each key and each budget name its own; a rate of 0 refuses every take; and while
// Redis cannot be reached each client keeps the budget in process, logged once, instead of
// refusing everything or letting everything through.
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Writable } from 'node:stream';
import t from 'tap';
import { createBudgets } from '../../src/cluster/budgets.js';
import { ManualClock } from '../../src/lib/clock.js';
import { createLogger } from '../../src/lib/logger.js';
import { testRedisUrl } from '../helpers/databases.js';

/** A logger whose lines the test reads. */
function logged() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  return { lines, log: createLogger('warn', sink) };
}

const clock = new ManualClock('2026-01-01T00:00:00Z');

t.test('a budget in Redis: one window per key and name, shared by every client', async (t) => {
  const { log } = logged();
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
  t.ok(wait >= 1 && wait <= 60_000, `the third waits for the window's end (${wait} ms)`);
  t.ok((await onB.take('gmail.com')) >= 1, 'through either client');
  t.equal(await onA.take('yahoo.com'), 0, 'another key has its own window');
  t.equal(await a.budget(`${name}-other`, rate).take('gmail.com'), 0, 'another name too');

  // A rate of nothing refuses every take, without asking Redis.
  const none = a.budget(name, { count: 0, perMs: 1000 });
  t.equal(await none.take('gmail.com'), 1000);
  t.equal(await none.take('yahoo.com'), 1000);
});

t.test('while Redis cannot be reached, the budget is kept in process and the outage logged once', async (t) => {
  // A port nothing listens on: every connection is refused.
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const { lines, log } = logged();
  const budgets = createBudgets({ redisUrl: `redis://127.0.0.1:${port}`, clock, log });
  t.teardown(() => budgets.close());
  await budgets.ready();
  t.equal(lines.filter((l) => l.includes('Redis is unreachable')).length, 1, 'the first failure is logged');
  const budget = budgets.budget('api-send', { count: 2, perMs: 60_000 });
  t.equal(await budget.take('key1'), 0);
  t.equal(await budget.take('key1'), 0);
  t.ok((await budget.take('key1')) > 0, 'the third is refused in process: the budget still holds');
  t.equal(await budget.take('key2'), 0, 'another key is not held up');
  const warned = lines.filter((l) => l.includes('Redis is unreachable; budgets are kept per node until it is back'));
  t.equal(warned.length, 1, 'one line for the outage, not one per take');
});
