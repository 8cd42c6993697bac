// Scheduled jobs run once per cluster (docs/cluster.md): every node's daily schedule fires at the
// same minute, and each job is run by exactly one of them. On SQLite (one node) the same holds
// for a schedule that fires twice in one minute.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { freshPostgres } from '../helpers/databases.js';
import { DAILY_JOBS } from '../../src/jobs.js';

const JOBS = DAILY_JOBS.map((j) => j.name).sort();
const at = new Date('2026-11-24T03:17:00.000Z');

t.test('one node runs each daily job (SQLite: once per scheduled minute)', async (t) => {
  const d = await bootDaemon(t);
  t.same((await d.app.runDailyJobs(at)).sort(), JOBS);
  t.same(await d.app.runDailyJobs(new Date(at.getTime() + 20_000)), [], 'the same minute again: nothing');
  t.same((await d.app.runDailyJobs(new Date(at.getTime() + 86_400_000))).sort(), JOBS, 'the next day: all of them');
});

t.test(
  'two nodes on one PostgreSQL database: each job once',
  { skip: !process.env.POSTERN_TEST_DATABASE_URL && 'needs POSTERN_TEST_DATABASE_URL' },
  async (t) => {
    const db = await freshPostgres();
    t.teardown(() => db.drop());
    const a = await bootDaemon(t, { databaseUrl: db.url });
    const b = await bootDaemon(t, { databaseUrl: db.url });
    for (const day of [0, 1, 2]) {
      const when = new Date(at.getTime() + day * 86_400_000);
      const [ranA, ranB] = await Promise.all([a.app.runDailyJobs(when), b.app.runDailyJobs(when)]);
      t.same([...ranA, ...ranB].sort(), JOBS, `day ${day}: every job ran once, by one node or the other`);
    }
  },
);
