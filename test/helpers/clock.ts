// The clock tests inject instead of the system's: time moves only when a test moves it, so
// scheduled sends, retries and retention are driven without sleeps or fake timers.
import type { Clock } from '../../src/lib/clock.js';

/** A clock that only moves when told to. */
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
