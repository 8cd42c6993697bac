// Sending identities: which domains a workspace may send from, and the DKIM key that signs them.
// A domain signs and counts as the workspace's own sending domain once its DKIM record has been
// confirmed (its sending side is verified, whatever its MX: domains.ts), while it is not failed or
// deleted. The key lookup runs for every message sent, so it is compiled once; it also says
// whether the domain's own return path is in use (the envelope sender then moves there). The key
// is stored sealed (lib/secret-box.ts) and opened here; signing-keys.ts caches what this returns.
import { type Db, queriesFor } from '../db/index.js';
import type { SecretBox } from '../lib/secret-box.js';
import { returnPathInUse } from './domains.js';
import { normalizeDomain } from './names.js';

export interface SigningKey {
  domain: string;
  selector: string;
  privateKey: string;
  /** The domain's own return path when confirmed and still published (domains.ts), else null. */
  returnPath?: string | null;
  /** An Ed25519 key that signs beside the RSA one (RFC 8463 dual signing), once a rotation brought one in. */
  ed25519?: { selector: string; privateKey: string } | null;
}

/** The DKIM key of the workspace's verified sending domain `domain`; null when there is none. */
export async function findSigningKey(
  db: Db,
  box: SecretBox,
  workspaceId: string,
  domain: string,
  defaultSelector: string,
): Promise<SigningKey | null> {
  const name = domain.toLowerCase();
  const query = queriesFor(db).compiled('domains.signingKey', [workspaceId, name, 'failed'], () =>
    db
      .selectFrom('domains')
      .select([
        'domain',
        'dkim_selector',
        'dkim_private_key',
        'dkim_ed25519_selector',
        'dkim_ed25519_private_key',
        'return_path_verified_at',
        'records_drift',
      ])
      .where('workspace_id', '=', workspaceId)
      .where('domain', '=', name)
      .where('status', '!=', 'failed')
      .where('dkim_verified_at', 'is not', null)
      .where('deleted_at', 'is', null),
  );
  const row = (await db.executeQuery(query)).rows[0];
  if (!row || !row.dkim_private_key) return null;
  return {
    domain: row.domain,
    selector: row.dkim_selector ?? defaultSelector,
    privateKey: box.open(row.dkim_private_key),
    returnPath: returnPathInUse(row),
    ed25519:
      row.dkim_ed25519_selector && row.dkim_ed25519_private_key
        ? { selector: row.dkim_ed25519_selector, privateKey: box.open(row.dkim_ed25519_private_key) }
        : null,
  };
}

/** True when the workspace has `domain` as a verified sending domain (its DKIM record confirmed). */
export async function isVerifiedDomain(db: Db, workspaceId: string, domain: string): Promise<boolean> {
  const name = normalizeDomain(domain);
  // Compiled once: SMTP submission asks it twice a message and the sender caps once a live send.
  const query = queriesFor(db).compiled('domains.isVerified', [workspaceId, name, 'failed'], () =>
    db
      .selectFrom('domains')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where('domain', '=', name)
      .where('status', '!=', 'failed')
      .where('dkim_verified_at', 'is not', null)
      .where('deleted_at', 'is', null),
  );
  return (await db.executeQuery(query)).rows.length > 0;
}

/** The domain part of an address, lowercased. */
export const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1).toLowerCase();
