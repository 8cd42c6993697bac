// Warm-up across the nodes of a cluster: two nodes' warm-up on one PostgreSQL database, each with
// its own shared-budget client (cluster/budgets.ts) and the same application clock. Ten messages
// taken at once, five through each node, against an allowance of 3: exactly three go, whichever
// node took them, and both nodes see the same schedule. A retry of a counted message (its MX was
// unreachable) is not counted again that day.
import t from 'tap';
import { createBudgets } from '../../../src/cluster/budgets.js';
import { createWarmUp } from '../../../src/channels/email/warm-up.js';
import { loadConfig } from '../../../src/config.js';
import { openDatabase } from '../../../src/db/database.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import { ManualClock } from '../../helpers/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import { freshPostgres } from '../../helpers/databases.js';

const skip = !process.env.POSTERN_TEST_DATABASE_URL && 'needs POSTERN_TEST_DATABASE_URL';
const log = createLogger('silent');

t.test("two nodes share a pair's daily allowance", { skip }, async (t) => {
  const pg = await freshPostgres();
  t.teardown(() => pg.drop());
  const handles = [openDatabase({ dialect: 'postgres', url: pg.url }), openDatabase({ dialect: 'postgres', url: pg.url })];
  await migrateToLatest(handles[0].db);
  const clock = new ManualClock('2026-03-02T10:00:00Z');
  const settings = loadConfig({ env: { POSTERN_DELIVERY_WARM_UP_ENABLED: 'true', POSTERN_DELIVERY_WARM_UP_CURVE: '3,6' } }).delivery.warmUp;
  const nodes = handles.map((h) => {
    const budgets = createBudgets({ databaseUrl: pg.url, clock, log });
    return { budgets, warmUp: createWarmUp({ db: h.db, clock, log, budgets, settings, sources: ['a'] }) };
  });
  t.teardown(async () => {
    for (const n of nodes) await n.budgets.close();
    for (const h of handles) await h.close();
  });

  const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => nodes[i % 2].warmUp.take('a', 'example.com', `msg_${i}`)));
  const granted = answers.filter((a) => a === null).length;
  t.equal(granted, 3, 'the allowance holds for the cluster');
  for (const a of answers.filter((x) => x !== null)) t.match(a, { reason: /today's allowance of 3 is used/, retryAt: Date });
  const counted = `msg_${answers.indexOf(null)}`;
  t.equal(await nodes[1].warmUp.take('a', 'example.com', counted), null, 'a retry of a message counted today goes, uncounted');
  for (const n of nodes) t.match((await n.warmUp.list())[0], { source: 'a', sendingDomain: 'example.com', allowance: 3, used: 3 });

  clock.set('2026-03-03T00:00:00Z');
  const next = await Promise.all(Array.from({ length: 8 }, (_, i) => nodes[i % 2].warmUp.take('a', 'example.com', `msg_n${i}`)));
  t.equal(next.filter((a) => a === null).length, 6, 'the next day: the next step, for the cluster');
});
