// Time is injected: domain code asks the clock, never `new Date()`, so tests can move time forward
// (scheduled sends, retries, retention) without fake timers that would freeze sockets and pools:
// they pass a clock of their own (test/helpers/clock.ts).

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * Timestamps that strictly increase within this process, as ISO 8601 UTC with nine fractional
 * digits: the clock's milliseconds, then a counter of the stamps given within that millisecond
 * (a clock that stands still or steps back keeps counting). Text of one length sorts as time, so a
 * list paged by such a timestamp never splits a millisecond's worth of rows at a page boundary.
 */
export function createStamps(clock: Clock): () => string {
  let ms = -Infinity;
  let n = 0;
  return () => {
    const now = clock.now().getTime();
    if (now > ms) {
      ms = now;
      n = 0;
    } else if (++n > 999_999) {
      ms += 1;
      n = 0;
    }
    return `${new Date(ms).toISOString().slice(0, 23)}${String(n).padStart(6, '0')}Z`;
  };
}

/**
 * An ISO 8601 date-time as the nine-digit UTC form createStamps() writes, keeping every fractional
 * digit it carries (a Date keeps only milliseconds); null when it is not one.
 */
export function toStamp(text: string): string | null {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?)(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?$/.exec(text);
  if (!m) {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || Number.isNaN(Date.parse(text))) return null;
    return `${new Date(text).toISOString().slice(0, 23)}000000Z`;
  }
  const fraction = (m[2] ?? '').padEnd(9, '0');
  const seconds = m[1].length === 16 ? `${m[1]}:00` : m[1];
  const ms = Date.parse(`${seconds}.${fraction.slice(0, 3)}${m[3] ?? 'Z'}`);
  if (Number.isNaN(ms)) return null;
  return `${new Date(ms).toISOString().slice(0, 23)}${fraction.slice(3)}Z`;
}
