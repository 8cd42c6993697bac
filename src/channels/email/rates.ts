// Per-destination-domain rate limits (`delivery.domainRates`, e.g. {"gmail.com": "60/min"}): one
// token bucket per configured domain, in process. A delivery that finds the bucket empty is
// deferred with a retryAt at the next token, so a slow domain never holds a dispatcher slot. Limits are per node: N nodes sharing a database send N times the rate.
import type { Clock } from '../../lib/clock.js';

const UNIT_MS: Record<string, number> = { s: 1000, sec: 1000, min: 60_000, h: 3_600_000, hour: 3_600_000, d: 86_400_000, day: 86_400_000 };

export interface Rate {
  count: number;
  perMs: number;
}

/** Parses "60/min" → {count: 60, perMs: 60000}. */
export function parseRate(text: string): Rate {
  const m = /^(\d+)\/(s|sec|min|h|hour|d|day)$/.exec(text.trim());
  if (!m) throw new Error(`invalid rate ${text}`);
  return { count: Number(m[1]), perMs: UNIT_MS[m[2]] };
}

export interface DomainRateLimiter {
  /** Takes a token for the domain: 0 when taken now, else the ms until one is available (nothing taken). */
  take(domain: string): number;
}

export function createDomainRateLimiter(rates: Record<string, string>, clock: Clock): DomainRateLimiter {
  const buckets = new Map<string, { rate: Rate; tokens: number; at: number }>();
  for (const [domain, text] of Object.entries(rates)) {
    const rate = parseRate(text);
    buckets.set(domain.toLowerCase(), { rate, tokens: rate.count, at: clock.now().getTime() });
  }
  return {
    take(domain) {
      const b = buckets.get(domain.toLowerCase());
      if (!b) return 0;
      if (b.rate.count === 0) return b.rate.perMs;
      const now = clock.now().getTime();
      const refill = ((now - b.at) * b.rate.count) / b.rate.perMs;
      b.tokens = Math.min(b.rate.count, b.tokens + refill);
      b.at = now;
      if (b.tokens >= 1) {
        b.tokens -= 1;
        return 0;
      }
      return Math.ceil(((1 - b.tokens) * b.rate.perMs) / b.rate.count);
    },
  };
}
