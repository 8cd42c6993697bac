// When a cron expression next fires (lib/cron.ts), held to node-cron's own answers: its match of a
// date, and the next runs its scheduler would pick from now. Also across a time zone's clock
// changes, and a real timer that fires.
import { createTask } from 'node-cron';
import t from 'tap';
import { purgeSchedule } from '../../src/app.js';
import { ConfigError } from '../../src/config.js';
import { nextRun, scheduleCron, type CronFields } from '../../src/lib/cron.js';

const EXPRESSIONS = [
  '17 3 * * *',
  '0 0 * * *',
  '*/15 * * * *',
  '0 */6 * * *',
  '30 2 * * 1-5',
  '0 9 * * MON,WED,FRI',
  '0 0 1 * *',
  '0 0 13 * 5',
  '0 12 29 2 *',
  '5 4 * JAN,JUL SUN',
  '*/20 * * * * *',
  '15 10 8 * * *',
  '@daily',
  '@hourly',
  '0 0 1-7 * 0',
];

const fieldsOf = purgeSchedule;

t.test('inbound.purgeCron: what node-cron reads, less the L and # forms', async (t) => {
  t.same(fieldsOf('17 3 * * *').minute, [17]);
  t.same(fieldsOf('0 0 * * 7').dayOfWeek, [0], 'Sunday as 7');
  t.same(fieldsOf('*/15 * * * *').minute, [0, 15, 30, 45]);
  t.same(fieldsOf('0 9 * * FRI,MON').dayOfWeek, [1, 5], 'ascending');
  // Before, these passed the configuration and crashed the daemon with a stack trace once it had
  // started (node-cron threw when the job was scheduled); test/cli/serve.test.ts runs one through
  // `postern serve`.
  const refused: [string, RegExp][] = [
    ['bogus', /^invalid setting inbound\.purgeCron \(POSTERN_INBOUND_PURGE_CRON\): not a cron expression: expected 5 or 6 fields/],
    ['61 3 * * *', /: not a cron expression/],
    ['0 0 31 2 *', /impossible day of month/],
    ['0 3 * * 5L', /: dayOfWeek: the L and # forms are not supported$/],
    ['0 3 * * 1#2', /: dayOfWeek: the L and # forms/],
    ['0 3 L * *', /: dayOfMonth: the L and # forms/],
  ];
  for (const [e, why] of refused) {
    let caught: unknown;
    try {
      purgeSchedule(e);
    } catch (err) {
      caught = err;
    }
    t.ok(caught instanceof ConfigError, `${e}: a ConfigError`);
    t.match((caught as Error).message, why);
  }
});

t.test("a time matches when node-cron's does", async (t) => {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (const e of EXPRESSIONS) {
    const task = createTask(e, () => {});
    const fields = fieldsOf(e);
    let agreed = 0;
    for (let i = 0; i < 400; i++) {
      // Whole seconds over two years, and the neighbours of each answer nextRun gives.
      const from = new Date(Date.UTC(2026, 0, 1) + Math.floor(random() * 2 * 365 * 86_400) * 1000);
      const next = nextRun(fields, from)!;
      t.ok(next.getTime() >= from.getTime(), `${e}: not before where it starts`);
      for (const d of [from, next, new Date(next.getTime() - 1000), new Date(next.getTime() + 1000)]) {
        if (task.match(d) === matches(fields, d)) agreed++;
        else t.fail(`${e} at ${d.toISOString()}: node-cron ${task.match(d)}`);
      }
      if (!task.match(next)) t.fail(`${e}: ${next.toISOString()} from ${from.toISOString()} does not match`);
    }
    t.equal(agreed, 1600, `${e}: every check agrees`);
    void task.destroy();
  }
});

// The matching rule nextRun searches by, for the checks above.
function matches(f: CronFields, d: Date): boolean {
  return (
    f.second.includes(d.getSeconds()) &&
    f.minute.includes(d.getMinutes()) &&
    f.hour.includes(d.getHours()) &&
    f.dayOfMonth.includes(d.getDate()) &&
    f.month.includes(d.getMonth() + 1) &&
    f.dayOfWeek.includes(d.getDay())
  );
}

t.test("the next runs from now are node-cron's", async (t) => {
  for (const e of EXPRESSIONS) {
    // node-cron reads the clock itself: ask it within one second, away from its edge, so both
    // start from the same second.
    let before: Date, after: Date, theirs: Date[];
    do {
      before = new Date();
      theirs = createTask(e, () => {}).getNextRuns(5);
      after = new Date();
    } while (Math.floor(before.getTime() / 1000) !== Math.floor(after.getTime() / 1000) || before.getMilliseconds() === 0);
    const ours: Date[] = [];
    let from = before;
    for (let i = 0; i < 5; i++) {
      const n = nextRun(fieldsOf(e), from)!;
      ours.push(n);
      from = new Date(n.getTime() + 1000);
    }
    t.same(
      ours.map((d) => d.toISOString()),
      theirs.map((d) => d.toISOString()),
      e,
    );
  }
});

t.test('across the clock changes of a time zone', async (t) => {
  const tz = process.env.TZ;
  process.env.TZ = 'Europe/Paris';
  t.teardown(() => {
    if (tz === undefined) delete process.env.TZ;
    else process.env.TZ = tz;
  });
  // 29 March 2026: 02:00 becomes 03:00, so 02:30 does not exist that day.
  const spring = nextRun(fieldsOf('30 2 * * *'), new Date('2026-03-28T12:00:00Z'))!;
  t.equal(spring.toISOString(), '2026-03-30T00:30:00.000Z', 'a time that does not exist is skipped to the next day');
  t.equal(nextRun(fieldsOf('17 3 * * *'), new Date('2026-03-28T12:00:00Z'))!.toISOString(), '2026-03-29T01:17:00.000Z');
  // 25 October 2026: 03:00 becomes 02:00 again, so 02:30 happens twice: the first one fires.
  const autumn = nextRun(fieldsOf('30 2 * * *'), new Date('2026-10-24T12:00:00Z'))!;
  t.equal(autumn.toISOString(), '2026-10-25T00:30:00.000Z', 'the first of the two');
  const after = nextRun(fieldsOf('30 2 * * *'), new Date(autumn.getTime() + 1000))!;
  t.equal(after.toISOString(), '2026-10-26T01:30:00.000Z', 'and not the second');
});

t.test('an expression that never fires again', async (t) => {
  // 29 February on a Monday, and it is in range: it recurs (2044); a 31st of a month that has
  // none is refused by parseCron instead.
  t.equal(nextRun(fieldsOf('0 0 29 2 1'), new Date('2026-01-01T00:00:00Z'))!.getFullYear(), 2044);
});

t.test('scheduleCron runs the job when the expression fires, and stops', async (t) => {
  const runs: Date[] = [];
  const task = scheduleCron(fieldsOf('* * * * * *'), (at) => runs.push(at));
  await new Promise((r) => setTimeout(r, 2_300));
  task.stop();
  const count = runs.length;
  t.ok(count >= 1, `it ran (${count} times in 2.3 s)`);
  for (const at of runs) t.equal(at.getMilliseconds(), 0, 'at whole seconds');
  t.ok(
    runs.every((at, i) => i === 0 || at.getTime() - runs[i - 1].getTime() === 1000),
    'each second once',
  );
  await new Promise((r) => setTimeout(r, 1_200));
  t.equal(runs.length, count, 'nothing after stop');
});
