// The contract the email sender uses to DKIM-sign mail from a verified custom domain. Only a
// verified, non-deleted domain of the workspace yields a key; anything else is null (send unsigned
// or through the shared sender, the caller decides).
import type { Db } from '../db/database.js';
import { normalizeDomain } from './names.js';

export interface SigningKey {
  domain: string;
  selector: string;
  privateKey: string;
}

export async function getSigningKey(db: Db, workspaceId: string, domain: string): Promise<SigningKey | null> {
  const row = await db
    .selectFrom('domains')
    .select(['domain', 'dkim_selector', 'dkim_private_key'])
    .where('workspace_id', '=', workspaceId)
    .where('domain', '=', normalizeDomain(domain))
    .where('kind', '=', 'custom')
    .where('status', '=', 'verified')
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!row || !row.dkim_selector || !row.dkim_private_key) return null;
  return { domain: row.domain, selector: row.dkim_selector, privateKey: row.dkim_private_key };
}
