// When a cron expression next fires, in the machine's time zone, and a timer that runs a job then.
// node-cron reads and checks the expression (five fields, or six with seconds first; names, ranges,
// steps, @daily and the like) where the daemon is put together (app.ts); its fields come here.
// node-cron's own scheduler wakes every second and reads the clock through Intl.DateTimeFormat,
// which loads ICU's data: an idle daemon held 7–8 MiB more with it (docs/performance.md).

import { systemClock, type Clock } from './clock.js';

export interface CronFields {
  second: number[];
  minute: number[];
  hour: number[];
  dayOfMonth: number[];
  month: number[];
  /** 0 is Sunday. */
  dayOfWeek: number[];
}

const FIELDS = ['second', 'minute', 'hour', 'dayOfMonth', 'month', 'dayOfWeek'] as const;

/** node-cron's parse of an expression as fields, each ascending, or why they cannot be used. */
export function cronFields(parsed: Record<(typeof FIELDS)[number], (number | string)[]>): CronFields | { error: string } {
  const fields = {} as CronFields;
  for (const name of FIELDS) {
    const values = parsed[name];
    // node-cron's last-day (L) and nth-weekday (#) forms; a daily job has no use for them.
    if (values.some((v) => typeof v !== 'number')) return { error: `${name}: the L and # forms are not supported` };
    fields[name] = [...new Set(values as number[])].sort((a, b) => a - b);
  }
  return fields;
}

/** Far enough for any expression that fires at all (29 February on a given weekday recurs within 28 years). */
const SEARCH_DAYS = 366 * 29;

/**
 * The first whole second at or after `from` that the fields match, in local time, or null if none
 * within 29 years. A day matches when its month, day of month and day of week all do (node-cron's
 * rule). A time that does not exist on a day (a clock set forward) is skipped; one that happens
 * twice (a clock set back) matches the first time.
 */
export function nextRun(fields: CronFields, from: Date): Date | null {
  const start = Math.ceil(from.getTime() / 1000) * 1000;
  const first = new Date(start);
  for (let d = 0; d < SEARCH_DAYS; d++) {
    const day = new Date(first.getFullYear(), first.getMonth(), first.getDate() + d);
    if (
      !fields.month.includes(day.getMonth() + 1) ||
      !fields.dayOfMonth.includes(day.getDate()) ||
      !fields.dayOfWeek.includes(day.getDay())
    ) {
      continue;
    }
    for (const h of fields.hour) {
      for (const m of fields.minute) {
        for (const s of fields.second) {
          const t = new Date(day.getFullYear(), day.getMonth(), day.getDate(), h, m, s);
          if (t.getTime() >= start && t.getHours() === h && t.getMinutes() === m) return t;
        }
      }
    }
  }
  return null;
}

/** The longest a timer waits before looking at the clock again (a clock set back, timers' 24-day limit). */
const MAX_WAIT_MS = 60 * 60 * 1000;

/** Where scheduleCron's timer comes from: Node's, or a test's that fires when told to. */
export interface CronTimers {
  /** Calls `fn` once after `ms`; the timer must not keep the process alive. */
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const nodeTimers: CronTimers = {
  set: (fn, ms) => setTimeout(fn, ms).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * Runs `job` each time the expression fires, from now on. Occurrences missed while the process
 * slept or the clock jumped ahead are skipped, as cron skips them. The timer never keeps the
 * process alive. The clock and the timer are Node's unless a test gives its own.
 */
export function scheduleCron(
  fields: CronFields,
  job: (at: Date) => void,
  { clock = systemClock, timers = nodeTimers }: { clock?: Clock; timers?: CronTimers } = {},
): { stop(): void } {
  let next = nextRun(fields, clock.now());
  let timer: unknown;
  const arm = () => {
    if (!next) return;
    timer = timers.set(tick, Math.max(0, Math.min(next.getTime() - clock.now().getTime(), MAX_WAIT_MS)));
  };
  // Woken early (a long wait cut short), it only waits again. Re-armed before the job runs, so a
  // job that stops the schedule clears the timer that would have come next.
  const tick = () => {
    const t = clock.now();
    const due = next && t.getTime() >= next.getTime() ? next : null;
    if (due) next = nextRun(fields, new Date(Math.max(due.getTime() + 1000, t.getTime())));
    arm();
    if (due) job(due);
  };
  arm();
  return { stop: () => timers.clear(timer) };
}
