// Time is injected: domain code asks the clock, never `new Date()`, so tests can move time forward
// (scheduled sends, retries, retention) without fake timers that would freeze sockets and pools.

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to; for tests and benchmarks. */
export class ManualClock implements Clock {
  private ms: number;
  constructor(start: Date | string | number = Date.now()) {
    this.ms = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.ms);
  }
  advance(ms: number): Date {
    this.ms += ms;
    return this.now();
  }
  set(to: Date | string | number): void {
    this.ms = new Date(to).getTime();
  }
}

/** Timestamps are stored as ISO 8601 UTC text in both dialects; this is their one formatter. */
export function iso(d: Date): string {
  return d.toISOString();
}
