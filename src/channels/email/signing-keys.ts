// The DKIM key of a message's From domain, read for every email sent (one of the seven statements
// a delivered message cost on PostgreSQL), through the two-second cache of domain reads
// (domains/read-cache.ts). The tracking setting is read fresh: `postern tracking enable` and the
// next send follow each other in scripts.
import type { Db } from '../../db/index.js';
import { domainReadCache, findSigningKey, type SigningKey } from '../../domains/index.js';
import type { EventBus } from '../../events/index.js';
import type { Clock } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/secret-box.js';

/** The workspace's verified sending domain's key (domains/sending.ts); null when there is none. */
export type SigningKeys = (workspaceId: string, domain: string, defaultSelector: string) => Promise<SigningKey | null>;

export function createSigningKeys({ db, bus, box, clock }: { db: Db; bus?: EventBus; box: SecretBox; clock: Clock }): SigningKeys {
  const keys = domainReadCache<SigningKey | null>({ bus, clock });
  return (workspaceId, domain, selector) =>
    keys(`${workspaceId}\u0000${domain.toLowerCase()}\u0000${selector}`, () => findSigningKey(db, box, workspaceId, domain, selector));
}
