// The budgets' shared store on PostgreSQL (cluster/budgets.ts): the same token bucket as in
// process, on the application clock, whichever of several clients takes from it. Before, the
// store counted wall-clock windows (a 2/min budget said "next slot in 60s" where the bucket says
// 30 s), and concurrent takes could refill one interval twice.
import t from 'tap';
import { createBudgets, memoryBudget } from '../../src/cluster/budgets.js';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { ManualClock } from '../../src/lib/clock.js';
import { createLogger } from '../../src/lib/logger.js';
import { freshPostgres } from '../helpers/databases.js';

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
