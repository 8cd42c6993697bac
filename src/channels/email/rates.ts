// Per-destination-domain rate limits (`delivery.domainRates`, e.g. {"gmail.com": "60/min"}): one
// budget per configured domain. A delivery that finds the bucket empty is
// deferred with a retryAt at the next token, so a slow domain never holds a dispatcher slot. With
// several nodes on PostgreSQL or Redis the rate is the cluster's, not each node's.
import type { Budget, Budgets, Rate } from '../../cluster/index.js';

const UNIT_MS: Record<string, number> = { s: 1000, sec: 1000, min: 60_000, h: 3_600_000, hour: 3_600_000, d: 86_400_000, day: 86_400_000 };

/** Parses "60/min" → {count: 60, perMs: 60000}. */
export function parseRate(text: string): Rate {
  const m = /^(\d+)\/(s|sec|min|h|hour|d|day)$/.exec(text.trim());
  if (!m) throw new Error(`invalid rate ${text}`);
  return { count: Number(m[1]), perMs: UNIT_MS[m[2]] };
}

export interface DomainRateLimiter {
  /** Takes a token for the domain: 0 when taken now, else the ms until one is available (nothing taken). */
  take(domain: string): Promise<number>;
}

/** One budget per configured domain (cluster/budgets.ts: shared by every node on PostgreSQL or Redis). */
export function createDomainRateLimiter(rates: Record<string, string>, budgets: Budgets): DomainRateLimiter {
  const byDomain = new Map<string, Budget>();
  for (const [domain, text] of Object.entries(rates)) {
    const name = domain.toLowerCase();
    byDomain.set(name, budgets.budget(`domain-rate:${name}`, parseRate(text)));
  }
  return {
    take(domain) {
      const name = domain.toLowerCase();
      return byDomain.get(name)?.take(name) ?? Promise.resolve(0);
    },
  };
}
