// The workers the app starts and the daily jobs it runs are the ones jobs.ts declares, under the
// declared names (the names the logs, the metrics and the cluster's once-a-day record use).
import t from 'tap';
import { DAILY_JOBS, WORKERS } from '../src/jobs.js';
import { bootDaemon } from './helpers/daemon.js';
import { testDatabases } from './helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`the app starts the declared workers and runs the declared daily jobs (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    t.same(
      d.app.workers.map((w) => w.name),
      WORKERS.map((w) => w.name),
      'one worker per declared entry, named as declared, in order',
    );
    t.same(
      await d.app.runDailyJobs(new Date('2026-11-24T03:17:00.000Z')),
      DAILY_JOBS.map((j) => j.name),
      'every daily job, in order',
    );
  });
}
