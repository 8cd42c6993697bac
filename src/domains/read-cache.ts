// What is read of domains on every RCPT and every message sent (where a recipient domain routes,
// whether a host is a return path, a sending domain's DKIM key) changes rarely, so answers are kept
// for two seconds: dropped at once when this node changes a domain (`domains.changed`, which a
// cluster's other nodes also hear), otherwise seen within the TTL (a change made by the CLI in
// another process). A read in progress is shared by those who ask meanwhile; a failed one is not
// kept. The age of an answer is measured on the injected clock, so a test decides when the TTL has
// passed instead of racing it.
import type { EventBus } from '../events/index.js';
import type { Clock } from '../lib/clock.js';

export const DOMAIN_CACHE_MS = 2_000;
const MAX_ENTRIES = 10_000;

/** An answer by key, read by `read` when not kept (or kept longer than DOMAIN_CACHE_MS). */
export type DomainReads<T> = (key: string, read: () => Promise<T>) => Promise<T>;

export function domainReadCache<T>({ bus, clock }: { bus?: EventBus; clock: Clock }): DomainReads<T> {
  const entries = new Map<string, { at: number; value: Promise<T> }>();
  bus?.subscribe('domains.changed', () => entries.clear());
  return (key, read) => {
    const now = clock.now().getTime();
    const hit = entries.get(key);
    if (hit && now - hit.at < DOMAIN_CACHE_MS) return hit.value;
    if (entries.size >= MAX_ENTRIES) entries.clear();
    const value = read();
    entries.set(key, { at: now, value });
    value.catch(() => entries.delete(key));
    return value;
  };
}
