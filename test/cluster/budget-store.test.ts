// The budgets' shared store on PostgreSQL (cluster/budgets.ts): the same token bucket as in
// process, on the application clock, whichever of several clients takes from it. Before, the
// store counted wall-clock windows (a 2/min budget said "next slot in 60s" where the bucket says
// 30 s), and concurrent takes could refill one interval twice.
import net from 'node:net';
import t from 'tap';
import { createBudgets, memoryBudget } from '../../src/cluster/budgets.js';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { ManualClock } from '../helpers/clock.js';
import { createLogger } from '../../src/lib/logger.js';
import { freshPostgres } from '../helpers/databases.js';
import { logLines } from '../helpers/log-lines.js';

const skip = !process.env.POSTERN_TEST_DATABASE_URL && 'needs POSTERN_TEST_DATABASE_URL';
const log = createLogger('silent');

t.test('a budget in PostgreSQL is the in-process bucket, shared', { skip }, async (t) => {
  const pg = await freshPostgres();
  t.teardown(() => pg.drop());
  const handle = openDatabase({ dialect: 'postgres', url: pg.url });
  await migrateToLatest(handle.db);
  await handle.close();
  const clock = new ManualClock('2026-01-01T00:00:00Z');
  // Two nodes' stores on one database, and the in-process bucket for comparison.
  const a = createBudgets({ databaseUrl: pg.url, clock, log });
  const b = createBudgets({ databaseUrl: pg.url, clock, log });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  t.equal(a.scope, 'cluster');
  const rate = { count: 2, perMs: 60_000 };
  const onA = a.budget('domain-rate', rate);
  const onB = b.budget('domain-rate', rate);
  const local = memoryBudget(rate, clock);
  const both = async (key: string) => [await (key === 'a' ? onA : onB).take('gmail.com'), await local.take('gmail.com')];
  t.same(await both('a'), [0, 0], 'the first of two');
  t.same(await both('b'), [0, 0], 'the second, through the other node');
  t.same(await both('a'), [30_000, 30_000], 'the third waits for the next token, as in process');
  clock.advance(30_000);
  t.same(await both('b'), [0, 0], 'refilled on the application clock');
  t.equal(await onA.take('other'), 0, 'another key has its own bucket');

  // Many takes at once from both nodes: exactly the burst is granted, however they interleave.
  const burst = a.budget('api-send', { count: 10, perMs: 1000 });
  const burstB = b.budget('api-send', { count: 10, perMs: 1000 });
  const waits = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? burst : burstB).take('key1')));
  t.equal(waits.filter((w) => w === 0).length, 10, 'ten of forty granted');
  t.ok(
    waits.filter((w) => w > 0).every((w) => w >= 1 && w <= 100),
    'the rest told when the next token comes',
  );
});

t.test('while PostgreSQL cannot be reached, the budget is kept in process and the outage logged once', async (t) => {
  const server = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { lines, log: warnings } = logLines('warn');
  const clock = new ManualClock('2026-01-01T00:00:00Z');
  const port = (server.address() as net.AddressInfo).port;
  const budgets = createBudgets({ databaseUrl: `postgres://postgres@127.0.0.1:${port}/none`, clock, log: warnings });
  t.teardown(() => budgets.close());
  t.equal(budgets.store, 'postgres');
  const budget = budgets.budget('api-send', { count: 2, perMs: 60_000 });
  t.same([await budget.take('key1'), await budget.take('key1'), await budget.take('key1')], [0, 0, 30_000], 'the bucket, in process');
  t.equal(await budget.take('key2'), 0, 'another key is not held up');
  const warned = lines.filter((l) => l.includes('budgets in PostgreSQL cannot be reached; kept per node until they can'));
  t.equal(warned.length, 1, 'one line for the outage, not one per take');
  t.same(await budgets.budget('api-read', { count: 0, perMs: 1000 }).take('key1'), 1000, 'a rate of nothing refuses, without asking');
});
