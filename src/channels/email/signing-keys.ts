// The DKIM key of a message's From domain, read for every email sent (one of the seven statements
// a delivered message cost on PostgreSQL). Keys change rarely, so answers are kept for two
// seconds, the inbound router's rule (inbound/routing.ts): dropped at once when this node changes
// a domain (`domains.changed`, which a cluster's other nodes also hear), otherwise seen within the
// TTL (`postern domain verify` or `remove` run in another process). The tracking setting is read
// fresh: `postern tracking enable` and the next send follow each other in scripts.
import type { Db } from '../../db/database.js';
import { findSigningKey, type SigningKey } from '../../domains/sending.js';
import type { EventBus } from '../../events/bus.js';

const TTL_MS = 2_000;
const MAX_ENTRIES = 10_000;

/** The workspace's verified sending domain's key (domains/sending.ts); null when there is none. */
export type SigningKeys = (workspaceId: string, domain: string, defaultSelector: string) => Promise<SigningKey | null>;

export function createSigningKeys({ db, bus }: { db: Db; bus?: EventBus }): SigningKeys {
  const entries = new Map<string, { at: number; key: Promise<SigningKey | null> }>();
  bus?.subscribe('domains.changed', () => entries.clear());
  return (workspaceId, domain, selector) => {
    const id = `${workspaceId}\u0000${domain.toLowerCase()}\u0000${selector}`;
    const now = performance.now();
    const hit = entries.get(id);
    if (hit && now - hit.at < TTL_MS) return hit.key;
    if (entries.size >= MAX_ENTRIES) entries.clear();
    // A read in progress is shared by the messages that ask meanwhile; a failed one is not kept.
    const key = findSigningKey(db, workspaceId, domain, selector);
    entries.set(id, { at: now, key });
    key.catch(() => entries.delete(id));
    return key;
  };
}
