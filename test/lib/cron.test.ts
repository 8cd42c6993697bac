// When a cron expression next fires (lib/cron.ts), held to node-cron's own answers: its match of a
// date, and the next runs its scheduler would pick from now. Also across a time zone's clock
// changes; the schedule's timer stepped on a ManualClock, and a real one that fires.
import { createTask } from 'node-cron';
import t from 'tap';
import { purgeSchedule } from '../../src/start-up-checks.js';
import { ConfigError } from '../../src/config.js';
import { ManualClock } from '../helpers/clock.js';
import { nextRun, scheduleCron, type CronFields, type CronTimers } from '../../src/lib/cron.js';
import { until } from '../helpers/until.js';

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

// A timer that fires only when told to, on a ManualClock: the schedule's sequence of waits and
// runs, without waiting for the seconds to pass.
class StepTimers implements CronTimers {
  readonly pending = new Map<number, { fn: () => void; at: number; ms: number }>();
  private n = 0;
  constructor(private readonly clock: ManualClock) {}
  set(fn: () => void, ms: number): number {
    this.pending.set(++this.n, { fn, at: this.clock.now().getTime() + ms, ms });
    return this.n;
  }
  clear(handle: unknown): void {
    this.pending.delete(handle as number);
  }
  /** The one armed timer's wait. */
  get wait(): number {
    if (this.pending.size !== 1) throw new Error(`${this.pending.size} timers armed, not one`);
    return [...this.pending.values()][0].ms;
  }
  /** Moves the clock to when the earliest timer is due (plus `late` ms) and fires it. */
  fire(late = 0): void {
    const [id, { fn, at }] = [...this.pending].sort((a, b) => a[1].at - b[1].at)[0] ?? [];
    if (id === undefined) throw new Error('no timer armed');
    this.pending.delete(id);
    this.clock.set(at + late);
    fn();
  }
}

t.test('scheduleCron runs the job at each second the expression fires, once, and stops', async (t) => {
  const clock = new ManualClock(new Date(2026, 4, 1, 10, 0, 0, 300));
  const timers = new StepTimers(clock);
  const runs: Date[] = [];
  const task = scheduleCron(fieldsOf('* * * * * *'), (at) => runs.push(at), { clock, timers });
  t.equal(runs.length, 0, 'nothing at once');
  t.equal(timers.wait, 700, 'it waits for the next whole second');
  for (let i = 0; i < 5; i++) timers.fire();
  t.same(
    runs.map((d) => d.getTime()),
    [1, 2, 3, 4, 5].map((s) => new Date(2026, 4, 1, 10, 0, s).getTime()),
    'each second once, at whole seconds',
  );
  t.equal(timers.wait, 1000, 'and then the one after');
  task.stop();
  t.equal(timers.pending.size, 0, 'stopped, no timer is left to run it again');
});

t.test('scheduleCron: a job that stops the schedule leaves no timer armed', async (t) => {
  const clock = new ManualClock(new Date(2026, 4, 1, 10, 0, 0, 300));
  const timers = new StepTimers(clock);
  let runs = 0;
  const task = scheduleCron(fieldsOf('* * * * * *'), () => ++runs === 2 && task.stop(), { clock, timers });
  timers.fire();
  timers.fire();
  t.equal(runs, 2);
  t.equal(timers.pending.size, 0, 'the timer armed for the next second was cleared');
});

t.test('scheduleCron: a long wait is taken an hour at a time, and a late wake skips what it missed', async (t) => {
  const clock = new ManualClock(new Date(2026, 4, 1, 10, 0, 0, 300));
  const timers = new StepTimers(clock);
  const runs: Date[] = [];
  const task = scheduleCron(fieldsOf('0 0 * * *'), (at) => runs.push(at), { clock, timers });
  t.teardown(() => task.stop());
  let wakes = 0;
  while (runs.length === 0) {
    t.ok(timers.wait <= 3_600_000, 'no wait longer than an hour');
    timers.fire();
    wakes++;
  }
  t.equal(wakes, 14, '14 hours less 0.3 s: 13 wakes that only wait again, then the run');
  t.same(runs, [new Date(2026, 4, 2)], 'at midnight');

  const each = new StepTimers(clock);
  const seconds: Date[] = [];
  const secondly = scheduleCron(fieldsOf('* * * * * *'), (at) => seconds.push(at), { clock, timers: each });
  t.teardown(() => secondly.stop());
  each.fire();
  each.fire(10_500); // the process slept: woken 10.5 s after the second that was due
  each.fire();
  const s0 = seconds[0].getTime();
  t.same(
    seconds.map((d) => d.getTime() - s0),
    [0, 1000, 12_000],
    'the due second runs late once, the ten it slept through are skipped',
  );
});

t.test("scheduleCron on Node's timer and clock: it fires at a whole second, and stops", async (t) => {
  const runs: Date[] = [];
  const task = scheduleCron(fieldsOf('* * * * * *'), (at) => runs.push(at));
  t.teardown(() => task.stop());
  await until('the first run', () => runs.length > 0);
  task.stop();
  t.equal(runs.length, 1, 'once');
  t.equal(runs[0].getMilliseconds(), 0, 'at a whole second');
  // The witness, scheduled after the stop, runs at the second the stopped one would have run
  // next, then at the one after: by its second run, a timer stop() failed to clear has fired.
  const witness: Date[] = [];
  const w = scheduleCron(fieldsOf('* * * * * *'), (at) => witness.push(at));
  t.teardown(() => w.stop());
  await until('two runs of a schedule started after the stop', () => witness.length >= 2);
  t.ok(witness[0].getTime() > runs[0].getTime(), 'the witness ran after the stopped schedule last did');
  t.equal(runs.length, 1, 'nothing after stop');
});
