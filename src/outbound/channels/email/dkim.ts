// DKIM (RFC 6376, rsa-sha256, relaxed/relaxed) with the per-domain keys Postern generates and keeps
// in the `domains` table. A message is signed when its From domain is a verified domain of the
// sending workspace; the shared sender (delivery.from) is unsigned unless the operator added its
// domain as a verified domain of that workspace. The key lookup is a small query of our own so
// delivery does not depend on the domains module (which owns creating and verifying the keys).
import DKIM from 'nodemailer/lib/dkim/index.js';
import type { Db } from '../../../db/database.js';
import { queriesFor } from '../../compiled-queries.js';

export interface SigningKey {
  domain: string;
  selector: string;
  privateKey: string;
}

// RFC 8058 requires List-Unsubscribe and List-Unsubscribe-Post to be covered by the signature.
const SIGNED_HEADERS =
  'From:Sender:Reply-To:Subject:Date:Message-ID:To:Cc:MIME-Version:Content-Type:Content-Transfer-Encoding:' +
  'In-Reply-To:References:List-Id:List-Unsubscribe:List-Unsubscribe-Post';

/** The verified domain row of the workspace for `domain`, with its key; null when there is none. */
export async function findSigningKey(db: Db, workspaceId: string, domain: string, defaultSelector: string): Promise<SigningKey | null> {
  const name = domain.toLowerCase();
  // Runs for every message sent: compiled once (compiled-queries.ts).
  const query = queriesFor(db).compiled('domains.signingKey', [workspaceId, name, 'verified'], () =>
    db
      .selectFrom('domains')
      .select(['domain', 'dkim_selector', 'dkim_private_key'])
      .where('workspace_id', '=', workspaceId)
      .where('domain', '=', name)
      .where('status', '=', 'verified')
      .where('deleted_at', 'is', null),
  );
  const row = (await db.executeQuery(query)).rows[0];
  if (!row || !row.dkim_private_key) return null;
  return { domain: row.domain, selector: row.dkim_selector ?? defaultSelector, privateKey: row.dkim_private_key };
}

/** True when the workspace has `domain` as a verified (sending) domain. */
export async function isVerifiedDomain(db: Db, workspaceId: string, domain: string): Promise<boolean> {
  const row = await db
    .selectFrom('domains')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('domain', '=', domain.toLowerCase())
    .where('status', '=', 'verified')
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return !!row;
}

/** Prepends a DKIM-Signature header to a complete RFC 5322 message. */
export async function signMessage(raw: Buffer, key: SigningKey): Promise<Buffer> {
  const signer = new DKIM({
    domainName: key.domain,
    keySelector: key.selector,
    privateKey: key.privateKey,
    headerFieldNames: SIGNED_HEADERS,
  });
  const chunks: Buffer[] = [];
  for await (const chunk of signer.sign(raw)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
