import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';

/** What a provider transport may use besides its connection. */
export interface TransportDeps {
  clock: Clock;
  log: Logger;
  /** Base URL providers call back on (status callbacks). */
  publicUrl(): string;
  /** Per-request timeout towards a provider (`channels.timeoutMs`). */
  timeoutMs: number;
}
